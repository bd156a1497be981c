package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/scaling"
	"github.com/tallybloom/tallybloom/seqno"
)

func TestVerifyPassesOnAGoodFile(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 100, ErrorRate: 0.01, Growth: 1})
	next := fillChain(t, f, 3, 0)
	for i := uint64(0); i < next; i += 4 {
		require.NoError(t, f.Remove(key(i), i))
	}
	require.NoError(t, f.Close())
	assert.NoError(t, Verify(f.Path()))
}

// VerifyWith opens the file read-only whatever its options say: beside a
// writer it takes no lock, and it never changes the file.
func TestVerifyWithIsReadOnly(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 100, ErrorRate: 0.01, Growth: 1})
	fillChain(t, f, 2, 0)
	require.NoError(t, f.Flush())
	require.NoError(t, VerifyWith(f.Path(), &Options{ReadOnly: false}), "beside a writer")
	require.NoError(t, VerifyWith(f.Path(), nil))
	require.NoError(t, f.Close())
	closed := readFile(t, f.Path())
	require.NoError(t, VerifyWith(f.Path(), &Options{}))
	assert.Equal(t, closed, readFile(t, f.Path()), "verify changed nothing")
}

func TestVerifyFindsWhatIsWrong(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 100, ErrorRate: 0.01, Growth: 1})
	fillChain(t, f, 2, 0)
	sub := f.chain.SubFilters()[1]
	offset := spaceOf(sub).offset
	require.NoError(t, f.Close())
	good := readFile(t, f.Path())

	damage := func(t *testing.T, change func(b []byte)) error {
		path := tempPath(t)
		b := append([]byte(nil), good...)
		change(b)
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return Verify(path)
	}
	t.Run("a lost counter", func(t *testing.T) {
		err := damage(t, func(b []byte) {
			region := b[offset:]
			for i := range region {
				if region[i] != 0 {
					region[i] = 0 // clear two counters
					return
				}
			}
		})
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "sub-filter 1 (level 1")
		assert.Contains(t, err.Error(), "non-zero but its tallies say")
		assert.Contains(t, err.Error(), "rebuild")
	})
	t.Run("a presence bit lost", func(t *testing.T) {
		err := damage(t, func(b []byte) {
			presence := b[offset+sub.Geometry.Bytes():][:counting.PresenceBytes(sub.Geometry)]
			for i := range presence {
				if presence[i] != 0 {
					presence[i] = 0
					return
				}
			}
		})
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "presence bits of 1 blocks disagree")
	})
	t.Run("a count changed", func(t *testing.T) {
		err := damage(t, func(b []byte) { b[talliesOffset(sub.Level)] ^= 0x04 })
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "counters sum to")
	})
	t.Run("a count of zero over counters", func(t *testing.T) {
		err := damage(t, func(b []byte) { binary.LittleEndian.PutUint64(b[talliesOffset(sub.Level):], 0) })
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Regexp(t, fmt.Sprintf(`sub-filter 1 \(level 1, ids from %d\): holds no key but [1-9][0-9]* counters below 15 are non-zero`, sub.FirstID), err.Error())
	})
	t.Run("a highest id below the first", func(t *testing.T) {
		require.NotZero(t, sub.FirstID)
		maxID := talliesOffset(sub.Level) + 8 // the tallies' second field
		err := damage(t, func(b []byte) { binary.LittleEndian.PutUint64(b[maxID:], sub.FirstID-1) })
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), fmt.Sprintf("sub-filter 1 (level 1, ids from %d): holds keys but its highest id %d is below its first id", sub.FirstID, sub.FirstID-1))
	})
	t.Run("a change in flight", func(t *testing.T) {
		path := tempPath(t)
		require.NoError(t, os.WriteFile(path, good, 0o644))
		g, err := Open(path, nil) // this boot, so the stop reads as a process crash
		require.NoError(t, err)
		g.mu.Lock()
		require.NoError(t, g.beginLocked())
		s := g.chain.SubFilters()[0]
		p := probeOf(s, counting.NewHasher(1).Key([]byte("x")))
		store{g}.Touch(s, p)
		inFlight := g.journal.MemSeq() + 1
		g.mu.Unlock()
		abandon(t, g)
		err = Verify(path)
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), fmt.Sprintf("change %d was in flight when its writer stopped: open the file for writing once to undo it", inFlight))
	})
	zeroRoom := []struct {
		name  string
		at    uint64
		where string
	}{
		{"the superblock's padding", sbCRC + 4, "page 0, bytes 76..255"},
		{"room between the state and its spare copy", offState + seqno.StateSize + 3, "page 0, bytes 292..319"},
		{"room between the spare state and the directory sequence", offState + seqno.StateAreaSize + 3, "page 0, bytes 356..511"},
		{"room after the journal", offJournal + seqno.JournalSize, "page 0, bytes 1824..2047"},
		{"the journal's padding", offJournal + 40, "the journal's padding"},
		{"an unused tally field", uint64(talliesOffset(7) + scaling.MetaUsed + 2), "the tallies of level 7"},
		{"a directory slot past its entries", offDirectory + PageSize - 1, "directory slot 0, past its entries"},
		{"a region's padding", offset + regionBytes(sub.Geometry, true) - 1, "sub-filter 1 (level 1, ids from"},
	}
	for _, z := range zeroRoom {
		t.Run(z.name, func(t *testing.T) {
			err := damage(t, func(b []byte) { b[z.at] = 0x5a })
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), z.where)
			assert.Contains(t, err.Error(), "which the format keeps zero, has 0x5a")
			assert.Contains(t, err.Error(), "1 problem(s)")
		})
	}
	t.Run("a damaged header", func(t *testing.T) {
		assert.ErrorIs(t, damage(t, func(b []byte) { b[sbSeed] ^= 1 }), ErrCorrupt)
	})
}

// Verify beside a writer: a file whose counters and tallies disagree for a
// moment, between a change's writes, is not called damaged.
func TestVerifyBesideAWriter(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 2_000, ErrorRate: 0.01, Growth: 1, Seed: 4})
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(0); !stop.Load(); i++ { // adds, and removes that keep 1 000 keys
			err := f.Add(key(i), i)
			if i >= 1_000 {
				err = errors.Join(err, f.Remove(key(i-1_000), i-1_000))
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	busy := 0
	for range 200 {
		err := Verify(f.Path())
		if errors.Is(err, ErrBusy) {
			assert.Contains(t, err.Error(), "verify again with the writer stopped")
			busy++
			continue
		}
		require.NoError(t, err, "never ErrCorrupt for a writer's changes in flight")
	}
	stop.Store(true)
	<-done
	t.Logf("%d of 200 checks beside the writer were busy", busy)
	require.NoError(t, f.Close())
	require.NoError(t, Verify(f.Path()), "stopped, the file verifies")

	// A writer that holds the file with a change in flight: busy, not a
	// writer that stopped.
	g, err := Open(f.Path(), nil)
	require.NoError(t, err)
	g.mu.Lock()
	require.NoError(t, g.beginLocked())
	sub := g.chain.SubFilters()[0]
	store{g}.Touch(sub, probeOf(sub, g.hasher.Key(key(1))))
	err = Verify(g.Path())
	require.ErrorIs(t, err, ErrBusy)
	assert.NotErrorIs(t, err, ErrCorrupt)
	if runtime.GOOS == "linux" { // where the system says who holds a lock
		assert.ErrorContains(t, err, "while verify read it (this process, pid ", "the writer is named")
	}
	require.NoError(t, g.commitLocked())
	g.mu.Unlock()
	require.NoError(t, g.Close())
}

// TestReaderOpensBesideAStateBeingWritten: a writer rewrites the state
// and its spare copy, a few dozen bytes each not written at once, when it
// marks the file dirty and when it flushes; a reader whose reads of the
// two straddle the end of one rewrite and the start of the next finds
// both half written. It reads them again instead of calling the file
// damaged. With no writer, two copies that do not decode are damage at
// once.
func TestReaderOpensBesideAStateBeingWritten(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 1_000, ErrorRate: 0.01, Seed: 22})
	require.NoError(t, f.Add(key(1), 1))
	state := f.page0[offState : offState+seqno.StateAreaSize]
	whole := bytes.Clone(state)
	state[3] ^= 0xff // as a reader may see them mid-write
	state[seqno.StateSpare+3] ^= 0xff
	rewritten := make(chan struct{})
	go func() {
		defer close(rewritten)
		time.Sleep(2 * time.Millisecond)
		copy(state, whole)
	}()
	reader, err := Open(f.Path(), &Options{ReadOnly: true})
	<-rewritten
	require.NoError(t, err, "a state half written beside its writer is not damage")
	assert.True(t, reader.Contains(key(1)))
	require.NoError(t, reader.Close())

	require.NoError(t, f.Close())
	damaged := readFile(t, f.Path())
	damaged[offState+3] ^= 0xff
	damaged[offState+seqno.StateSpare+3] ^= 0xff
	require.NoError(t, os.WriteFile(f.Path(), damaged, 0o644))
	_, err = Open(f.Path(), &Options{ReadOnly: true})
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "its spare copy: state checksum mismatch")
}
