package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/counting"
)

func exportedFilter(t *testing.T) (*Filter, []byte) {
	t.Helper()
	f := newTestFilter(t, Config{Capacity: 500, ErrorRate: 0.01, Growth: 1, Seed: 21})
	next := fillChain(t, f, 3, 0)
	for i := uint64(0); i < next; i += 5 {
		require.NoError(t, f.Remove(key(i), i))
	}
	_, err := f.DropBefore(f.Stats().SubFilters[1].FirstID)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, f.Export(&buf))
	return f, buf.Bytes()
}

func TestExportImportRoundTrip(t *testing.T) {
	f, stream := exportedFilter(t)
	var padded uint64
	for _, s := range f.Stats().SubFilters {
		padded += s.Bytes
	}
	assert.Less(t, uint64(len(stream)), padded+exportHeader+exportSub*3+4+1, "no page padding")

	g, err := Import(tempPath(t), bytes.NewReader(stream), nil)
	require.NoError(t, err)
	defer g.Close()
	keys := keysFrom(0, 20_000)
	assert.Equal(t, f.ContainsBatch(keys, nil), g.ContainsBatch(keys, nil))
	fs, gs := f.Stats(), g.Stats()
	assert.Equal(t, fs.SubFilters, gs.SubFilters)
	assert.Equal(t, fs.MemSeq, gs.MemSeq, "the import continues at the exported sequence")
	assert.Equal(t, fs.Config, gs.Config)
	for i, sub := range f.chain.SubFilters() {
		assert.Equal(t, spaceOf(sub).counters, spaceOf(g.chain.SubFilters()[i]).counters, "counters byte for byte")
	}
	require.NoError(t, g.Add(key(1<<40), 1<<40), "an imported filter takes changes")
	require.NoError(t, g.Close())
	assert.NoError(t, Verify(g.Path()))

	snap, err := ReadExport(bytes.NewReader(stream))
	require.NoError(t, err)
	for _, k := range keys {
		require.Equal(t, f.Contains(k), snap.Contains(k))
	}
	assert.Equal(t, f.Config(), snap.Config())
	assert.Equal(t, fs.MemSeq, snap.MemSeq())
}

// Import, ReadExport and ReadFrozen read a stream no further than an
// export's checksum, so exports can follow one another in one stream and a
// caller can tell whether anything came after one.
func TestReadersStopAtTheChecksum(t *testing.T) {
	f, stream := exportedFilter(t)
	var frozen bytes.Buffer
	require.NoError(t, f.ExportFrozen(&frozen))
	joined := slices.Concat(stream, frozen.Bytes(), stream, []byte("tail"))
	r := bytes.NewReader(joined)

	g, err := Import(tempPath(t), r, nil)
	require.NoError(t, err)
	require.NoError(t, g.Close())
	assert.Equal(t, len(joined)-len(stream), r.Len(), "Import stops at its checksum")
	_, err = ReadFrozen(r)
	require.NoError(t, err)
	assert.Equal(t, len(stream)+4, r.Len(), "ReadFrozen stops at its checksum")
	_, err = ReadExport(r)
	require.NoError(t, err)
	assert.Equal(t, 4, r.Len(), "ReadExport stops at its checksum")
}

// A WholeStream holds one export and nothing more: whatever follows the
// checksum fails every reader, and Import never gives its file the path,
// not even while it reads what follows.
func TestWholeStreamRefusesWhatFollows(t *testing.T) {
	f, stream := exportedFilter(t)
	var buf bytes.Buffer
	require.NoError(t, f.ExportFrozen(&buf))
	frozen := buf.Bytes()
	dir := t.TempDir()
	path := filepath.Join(dir, "imported.tb")
	readers := map[string]struct {
		export []byte
		read   func(r io.Reader) error
	}{
		"Import": {stream, func(r io.Reader) error {
			g, err := Import(path, r, nil)
			if err == nil {
				err = errors.Join(g.Close(), os.Remove(path))
			}
			return err
		}},
		"ImportAs": {stream, func(r io.Reader) error {
			g, err := ImportAs(path, r, true, nil)
			if err == nil {
				err = errors.Join(g.Close(), os.Remove(path))
			}
			return err
		}},
		"ReadExport": {stream, func(r io.Reader) error { _, err := ReadExport(r); return err }},
		"ReadFrozen": {frozen, func(r io.Reader) error { _, err := ReadFrozen(r); return err }},
	}
	for name, c := range readers {
		require.NoError(t, c.read(WholeStream(bytes.NewReader(c.export))), "%s: the export alone", name)
		for tail, says := range map[string]string{
			"\n":             ": 1 more byte after its checksum: a byte appended",
			string(c.export): fmt.Sprintf(": %d more bytes after its checksum: two exports joined", len(c.export)),
		} {
			// The tail arrives in reads of its own, each of which looks for
			// a file at path.
			r := &watchingReader{r: bytes.NewReader(slices.Concat(c.export, []byte(tail))), at: len(c.export), path: path}
			err := c.read(WholeStream(r))
			require.ErrorIs(t, err, ErrCorrupt, name)
			assert.Contains(t, err.Error(), says, name)
			assert.Zero(t, r.sawFile, "%s: a file at path while the tail was read", name)
			assert.Positive(t, r.tailReads, "%s: the tail was read", name)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "%s leaves nothing behind", name)
		}
		endless := io.MultiReader(bytes.NewReader(c.export), zeros{})
		err := c.read(WholeStream(endless))
		require.ErrorIs(t, err, ErrCorrupt, name)
		assert.Contains(t, err.Error(), ": more than 64 MiB after its checksum", name)
		broken := io.MultiReader(bytes.NewReader(c.export), iotest.ErrReader(errors.New("disk gone")))
		err = c.read(WholeStream(broken))
		require.ErrorIs(t, err, ErrCorrupt, name)
		assert.Contains(t, err.Error(), "what follows its checksum: disk gone", name)
		// Unmarked, the readers stop at the checksum as before.
		require.NoError(t, c.read(bytes.NewReader(slices.Concat(c.export, []byte("tail")))), name)
	}
}

// zeros reads zeros for ever.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// watchingReader reads r, in pieces that end at offset at, and from there
// notes whether a file exists at path each time it is read.
type watchingReader struct {
	r                  *bytes.Reader
	at, read           int
	path               string
	tailReads, sawFile int
}

func (w *watchingReader) Read(b []byte) (int, error) {
	if w.read < w.at {
		b = b[:min(len(b), w.at-w.read)]
	} else {
		w.tailReads++
		if _, err := os.Stat(w.path); err == nil {
			w.sawFile++
		}
		b = b[:min(len(b), 1)]
	}
	n, err := w.r.Read(b)
	w.read += n
	return n, err
}

func TestFrozenExport(t *testing.T) {
	f, _ := exportedFilter(t)
	var buf bytes.Buffer
	require.NoError(t, f.ExportFrozen(&buf))
	assert.Less(t, uint64(buf.Len()), f.Stats().CounterBytes/4+64, "a quarter of the counters")
	z, err := ReadFrozen(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	for i := range uint64(20_000) {
		require.Equal(t, f.Contains(key(i)), z.Contains(key(i)), "key %d", i)
	}
	assert.True(t, z.ContainsString(string(key(1499))))
}

// Counters longer than the 1 MiB an import or ReadExport reads at a time,
// and not a whole number of them, come through byte for byte.
func TestExportImportOfCountersLongerThanAChunk(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 200_000, ErrorRate: 0.01, Fixed: true, Seed: 22})
	counters := spaceOf(f.chain.SubFilters()[0]).counters
	require.Greater(t, len(counters), 1<<20)
	require.NotZero(t, len(counters)%(1<<20))
	for i := range uint64(2_000) {
		require.NoError(t, f.Add(key(i), i))
	}
	var stream bytes.Buffer
	require.NoError(t, f.Export(&stream))
	g, err := Import(tempPath(t), bytes.NewReader(stream.Bytes()), nil)
	require.NoError(t, err)
	defer g.Close()
	assert.Equal(t, counters, spaceOf(g.chain.SubFilters()[0]).counters, "imported")
	snap, err := ReadExport(&stream)
	require.NoError(t, err)
	assert.Equal(t, counters, snap.Counters(0), "read into memory")
}

// A sub-filter's level past the last a chain has is refused, and said to
// be, with the stream's directory, before any counter is read: in an
// export and in a frozen export.
func TestExportOfALevelPastTheChainIsRefused(t *testing.T) {
	f, stream := exportedFilter(t)
	b := append([]byte(nil), stream...)
	binary.LittleEndian.PutUint32(b[exportHeader:], MaxSubFilters)
	_, err := ReadExport(bytes.NewReader(b))
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "export: sub-filter 0: level 64, past the 64 a chain holds")

	var frozen bytes.Buffer
	require.NoError(t, f.ExportFrozen(&frozen))
	b = frozen.Bytes()
	b[len(FrozenMagic)+1+8+1] = MaxSubFilters // the first sub-filter's level
	_, err = ReadFrozen(bytes.NewReader(b))
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "frozen filter: sub-filter 0: level 64, past the 64 a chain holds")
}

func TestDamagedExports(t *testing.T) {
	f, stream := exportedFilter(t)
	var frozen bytes.Buffer
	require.NoError(t, f.ExportFrozen(&frozen))

	frozenHead := len(FrozenMagic) + 1 + 8 + 1
	for name, c := range map[string]struct {
		stream []byte
		want   error
		says   string // the words that say which part, where checked
	}{
		"export flipped counter":   {flipAt(stream, len(stream)-100), ErrCorrupt, ""},
		"export truncated":         {stream[:len(stream)-10], ErrCorrupt, ""},
		"export short header":      {stream[:20], ErrCorrupt, ""},
		"export not ours":          {[]byte("PK\x03\x04 a zip file, not an export at all......................................"), ErrNotFilter, ""},
		"export newer":             {setByte(stream, 8, ExportVersion+1), ErrVersion, ""},
		"export older":             {setByte(stream, 8, ExportVersion-1), ErrVersion, ""},
		"export claims a lot":      {claimBlocks(stream, 1<<34), ErrCorrupt, ""},
		"frozen flipped bit":       {flipAt(frozen.Bytes(), frozen.Len()-10), ErrCorrupt, ""},
		"frozen truncated":         {frozen.Bytes()[:frozen.Len()-3], ErrCorrupt, ""},
		"frozen newer":             {setByte(frozen.Bytes(), 2, FrozenVersion+1), ErrVersion, ""},
		"frozen older":             {setByte(frozen.Bytes(), 2, FrozenVersion-1), ErrVersion, ""},
		"export of no sub-filters": {put32(stream, 64, 0), ErrCorrupt, "export: bad parameters"},
		"export of 65 sub-filters": {put32(stream, 64, MaxSubFilters+1), ErrCorrupt, "export: bad parameters"},
		"export flag unknown":      {put32(stream, 12, 1<<30), ErrCorrupt, "export: bad parameters"},
		"export rate of 2":         {put64(stream, 32, math.Float64bits(2)), ErrCorrupt, "export: bad parameters"},
		"export sub-filter flag":   {put64(stream, exportHeader+56, 1<<40), ErrCorrupt, "export: sub-filter 0: unknown flags"},
		"export directory cut":     {stream[:exportHeader+10], ErrCorrupt, "export: truncated directory"},
		"frozen of no sub-filters": {setByte(frozen.Bytes(), frozenHead-1, 0), ErrCorrupt, "frozen filter of 0 sub-filters"},
		"frozen head cut":          {frozen.Bytes()[:frozenHead-1], ErrCorrupt, "frozen filter: truncated"},
		"frozen shapes cut":        {frozen.Bytes()[:frozenHead+1], ErrCorrupt, "frozen filter: truncated"},
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			if bytes.HasPrefix(c.stream, []byte(FrozenMagic)) {
				_, err = ReadFrozen(bytes.NewReader(c.stream))
			} else {
				_, err = ReadExport(bytes.NewReader(c.stream))
				assert.ErrorIs(t, err, c.want)
				path := tempPath(t)
				_, err = Import(path, bytes.NewReader(c.stream), nil)
				assert.NoFileExists(t, path, "a refused import leaves no file")
			}
			assert.ErrorIs(t, err, c.want)
			if c.says != "" {
				assert.ErrorContains(t, err, c.says)
			}
		})
	}
}

func flipAt(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x01
	return c
}

func put32(b []byte, i int, v uint32) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(c[i:], v)
	return c
}

func put64(b []byte, i int, v uint64) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint64(c[i:], v)
	return c
}

func setByte(b []byte, i int, v byte) []byte {
	c := append([]byte(nil), b...)
	c[i] = v
	return c
}

// claimBlocks rewrites the first sub-filter's block count, as a hostile
// stream that claims far more than it holds.
func claimBlocks(b []byte, blocks uint64) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint64(c[exportHeader+24:], blocks)
	return c
}

func FuzzReadExport(f *testing.F) {
	var buf bytes.Buffer
	flt, err := Create(f.TempDir()+"/f.tb", Config{Capacity: 10, ErrorRate: 0.1, Growth: 1, Seed: 1}, nil)
	require.NoError(f, err)
	for i := range uint64(25) {
		require.NoError(f, flt.Add(key(i), i))
	}
	require.NoError(f, flt.Export(&buf))
	f.Add(buf.Bytes())
	f.Add(slices.Concat(buf.Bytes(), []byte{0}))
	buf.Reset()
	require.NoError(f, flt.ExportFrozen(&buf))
	f.Add(buf.Bytes())
	f.Add(slices.Concat(buf.Bytes(), buf.Bytes()))
	require.NoError(f, flt.Close())
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := bytes.NewReader(stream)
		snap, err := ReadExport(r)
		if err == nil {
			snap.Contains([]byte("x"))
		} else {
			assert.Nil(t, snap)
		}
		// A WholeStream reads the same, and also refuses a tail.
		_, wholeErr := ReadExport(WholeStream(bytes.NewReader(stream)))
		assert.Equal(t, err == nil && r.Len() == 0, wholeErr == nil, "export: %v, %d bytes after it; whole: %v", err, r.Len(), wholeErr)
		r = bytes.NewReader(stream)
		z, err := ReadFrozen(r)
		if err == nil {
			z.Contains([]byte("x"))
		} else {
			assert.Nil(t, z)
		}
		_, wholeErr = ReadFrozen(WholeStream(bytes.NewReader(stream)))
		assert.Equal(t, err == nil && r.Len() == 0, wholeErr == nil, "frozen: %v, %d bytes after it; whole: %v", err, r.Len(), wholeErr)
	})
}

// ImportAs changes a filter's layout: a filter of counters only, here a
// version 2 file, gains presence bits, and loses them again; the counters,
// tallies, sequence and answers stay the same throughout, and each new file
// takes changes.
func TestImportAsChangesTheLayout(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 400, ErrorRate: 0.01, Growth: 1, Seed: 5, CountersOnly: true})
	fillChain(t, f, 2, 0)
	require.NoError(t, f.Close())
	require.NoError(t, os.WriteFile(f.Path(), asVersion2(readFile(t, f.Path())), 0o644))
	old, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer old.Close()
	keys := keysFrom(0, 20_000)
	want, was := old.ContainsBatch(keys, nil), old.Stats()

	from, imported := old, []*Filter{}
	for _, countersOnly := range []bool{false, true} { // presence bits, then counters only again
		var stream bytes.Buffer
		require.NoError(t, from.Export(&stream))
		g, err := ImportAs(tempPath(t), &stream, countersOnly, nil)
		require.NoError(t, err)
		defer g.Close()
		assert.Equal(t, countersOnly, g.Config().CountersOnly)
		if countersOnly {
			assert.Zero(t, g.Stats().PresenceBytes)
		} else {
			assert.Positive(t, g.Stats().PresenceBytes, "presence bits kept")
			for _, sub := range g.chain.SubFilters() {
				assert.Zero(t, sub.Filter().StalePresence(), "and set from the counters")
			}
		}
		assert.Equal(t, want, g.ContainsBatch(keys, nil))
		assert.Equal(t, was.SubFilters, g.Stats().SubFilters, "geometry and tallies")
		assert.Equal(t, was.MemSeq, g.Stats().MemSeq)
		for i, sub := range old.chain.SubFilters() {
			assert.Equal(t, spaceOf(sub).counters, spaceOf(g.chain.SubFilters()[i]).counters, "counters byte for byte")
		}
		from, imported = g, append(imported, g)
	}
	for _, g := range imported {
		require.NoError(t, g.Add(key(1<<40), 1<<40))
		require.NoError(t, g.Close())
		require.NoError(t, Verify(g.Path()))
		assert.Equal(t, uint32(FormatVersion), binary.LittleEndian.Uint32(readFile(t, g.Path())[sbVersion:]), "the new file is of the current version")
	}
}

// A reader reads the sequence, then the directory slots. If the writer
// commits two changes that each write a directory in between, neither slot
// holds the directory live at the sequence it read: the writer overtook it,
// which a copy in progress reads again, not a damaged file.
func TestReaderOvertakenByTwoDirectoriesIsNotCorrupt(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 100, ErrorRate: 0.01, Seed: 9})
	r, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	read := r.journal.MemSeq()
	levels := func() int { return len(f.Stats().SubFilters) }
	for i, start := uint64(0), levels(); levels() < start+2; i++ {
		require.NoError(t, f.Add(key(i), i)) // opens two sub-filters, a directory each
	}
	r.mu.Lock()
	err = r.followLocked(read)
	r.mu.Unlock()
	require.ErrorIs(t, err, errMovedOn)
	require.NotErrorIs(t, err, ErrCorrupt)
	snap, err := r.Snapshot()
	require.NoError(t, err, "read again at the sequence now")
	require.Len(t, snap.SubFilters(), levels())
}

// A read-only process cannot stop its writer. Its copies (Snapshot, Export,
// ExportFrozen) are each consistent at one sequence, or ErrBusy: never a
// stream that fails its checksum, nor tallies that disagree with the
// counters.
func TestReadOnlyCopiesWhileTheWriterChanges(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 5_000, ErrorRate: 0.01, Growth: 1, Seed: 8})
	var stop atomic.Bool
	var drops atomic.Int64
	done := make(chan struct{})
	// The writer adds in bursts, with pauses a copy fits in, and opens and
	// retires sub-filters. A pause is as long as the burst before it, and
	// at least 5 ms: with invariant checks on a busy machine an add took
	// 150 µs, and fixed pauses of 5 ms left copies too few quiet moments
	// to make 30 in 30 s.
	go func() {
		defer close(done)
		burst := time.Now()
		for i := uint64(0); !stop.Load(); i++ {
			if err := f.Add(key(i), i); err != nil {
				t.Error(err)
				return
			}
			if i%500 != 0 {
				continue
			}
			if subs := f.Stats().SubFilters; len(subs) > 3 {
				if _, err := f.DropBefore(subs[len(subs)-2].FirstID); err != nil {
					t.Error(err)
					return
				}
				drops.Add(1)
			}
			time.Sleep(max(5*time.Millisecond, time.Since(burst)))
			burst = time.Now()
		}
	}()
	r, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	copies, busy := 0, 0
	// At least 30 copies, and on until the writer has opened and retired
	// sub-filters, so that copies follow a changing directory.
	for deadline := time.Now().Add(30 * time.Second); copies+busy < 30 || drops.Load() < 2; {
		require.True(t, time.Now().Before(deadline), "the writer retires sub-filters: %d copies, %d busy, %d retirements", copies, busy, drops.Load())
		var stream, frozen bytes.Buffer
		err := errors.Join(r.Export(&stream), r.ExportFrozen(&frozen))
		if errors.Is(err, ErrBusy) {
			busy++
			continue
		}
		require.NoError(t, err)
		g, err := Import(filepath.Join(t.TempDir(), "copy.tb"), &stream, nil)
		require.NoError(t, err, "an export read while the writer changes the file")
		require.Empty(t, g.verify(), "tallies, counters and presence bits agree")
		require.NoError(t, g.Close())
		_, err = ReadFrozen(&frozen)
		require.NoError(t, err)
		copies++
	}
	stop.Store(true)
	<-done
	t.Logf("%d consistent copies, %d busy, the writer at sequence %d after %d retirements", copies, busy, f.Stats().MemSeq, drops.Load())
	require.Positive(t, copies)
}

// With a change always in flight, a read-only copy gives up with ErrBusy
// and writes nothing.
func TestReadOnlyCopyOfABusyFilter(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 1000, ErrorRate: 0.01})
	require.NoError(t, f.Add(key(1), 1))
	r, err := Open(f.Path(), &Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	r.quietTries = 3

	func() {
		f.mu.Lock()
		require.NoError(t, f.beginLocked())
		sub := f.chain.SubFilters()[0]
		store{f}.Touch(sub, probeOf(sub, f.hasher.Key(key(2)))) // sealed, not committed
		inFlight := f.journal.MemSeq() + 1
		// The change commits however the checks below end.
		defer func() {
			assert.NoError(t, f.commitLocked())
			f.mu.Unlock()
		}()
		var out bytes.Buffer
		for _, copyOut := range []func() error{
			func() error { _, err := r.Snapshot(); return err },
			func() error { return r.Export(&out) },
			func() error { return r.ExportFrozen(&out) },
		} {
			err := copyOut()
			require.ErrorIs(t, err, ErrBusy)
			assert.Contains(t, err.Error(), fmt.Sprintf("change %d was in flight during each of 3 attempts", inFlight))
			assert.Contains(t, err.Error(), "if its writer stopped, open the file for writing once to undo it")
		}
		assert.Zero(t, out.Len())

		// While a copy waits for the writer, a lookup that must follow a
		// new directory does not wait for the copy.
		r.quietTries = quietAttempts
		copied := make(chan error, 1)
		go func() { _, err := r.Snapshot(); copied <- err }()
		time.Sleep(20 * time.Millisecond) // the copy is pausing between attempts
		atomic.AddUint64(f.dirSeq, 1)     // as a writer's new directory would
		defer atomic.AddUint64(f.dirSeq, ^uint64(0))
		r.Contains(key(1))
		select {
		case <-copied:
			t.Error("the lookup waited for the copy")
		default:
			require.ErrorIs(t, <-copied, ErrBusy)
		}
	}()

	snap, err := r.Snapshot()
	require.NoError(t, err, "quiet again")
	assert.Equal(t, f.Stats().MemSeq, snap.MemSeq())
}

// TestWriteExportFromParts: WriteExport, given a filter's parts and its
// counters a chunk at a time, writes the filter's own export stream; an
// error from read ends the stream short, which Import refuses.
func TestWriteExportFromParts(t *testing.T) {
	f, stream := exportedFilter(t)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	var asked []uint64
	read := func(i int, offset uint64, dst []byte) error {
		asked = append(asked, offset)
		copy(dst, snap.Counters(i)[offset:])
		return nil
	}
	var buf bytes.Buffer
	require.NoError(t, WriteExport(&buf, snap.Config(), snap.MemSeq(), snap.SubFilters(), read))
	assert.Equal(t, stream, buf.Bytes())
	assert.Len(t, asked, len(snap.SubFilters()), "one chunk a sub-filter this small")

	lost := errors.New("the copy went away")
	var short bytes.Buffer
	err = WriteExport(&short, snap.Config(), snap.MemSeq(), snap.SubFilters(), func(i int, offset uint64, dst []byte) error {
		if i == 1 {
			return lost
		}
		return read(i, offset, dst)
	})
	assert.ErrorIs(t, err, lost)
	_, err = Import(tempPath(t), &short, nil)
	assert.ErrorIs(t, err, ErrCorrupt)

	// Every filter is at sequence 1 or more from its creation on: an
	// export at 0, whole and checksummed, is not of a filter.
	var zero bytes.Buffer
	require.NoError(t, WriteExport(&zero, snap.Config(), 0, snap.SubFilters(), read))
	path := tempPath(t)
	_, err = Import(path, &zero, nil)
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "export at sequence 0")
	assert.NoFileExists(t, path)
}

// WriteExport asks read for the counters of a sub-filter larger than a
// chunk a chunk of at most 8 MiB at a time, in order, to their last byte
// and never past it.
func TestWriteExportReadsALargeSubFilterInChunks(t *testing.T) {
	f, _ := exportedFilter(t)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	subs := slices.Clone(snap.SubFilters())[:1]
	subs[0].Flat, subs[0].Blocks = false, 2*exportChunk/counting.BlockBytes+1 // two chunks and a block
	size := subs[0].Blocks * counting.BlockBytes
	var next uint64
	err = WriteExport(io.Discard, snap.Config(), snap.MemSeq(), subs, func(i int, offset uint64, dst []byte) error {
		require.Equal(t, next, offset, "in order")
		require.LessOrEqual(t, len(dst), exportChunk)
		require.LessOrEqual(t, offset+uint64(len(dst)), size, "past the counters' end")
		next += uint64(len(dst))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, size, next, "to their last byte")
}

// A nil reader or writer is refused with ErrInvalidInput, by every reader
// and writer of exports, and Import makes nothing; so are a nil read
// function and sub-filters of no size or of exabytes given to WriteExport.
func TestNilStreamsAreRefused(t *testing.T) {
	f, _ := exportedFilter(t)
	snap, err := f.Snapshot()
	require.NoError(t, err)
	reader := newTestFilter(t, Config{Capacity: 10, ErrorRate: 0.1})
	reader = reopen(t, reader, &Options{ReadOnly: true})
	dir := t.TempDir()
	path := filepath.Join(dir, "imported.tb")
	for name, err := range map[string]error{
		"Export":                  f.Export(nil),
		"ExportFrozen":            f.ExportFrozen(nil),
		"Export, read-only":       reader.Export(nil),
		"ExportFrozen, read-only": reader.ExportFrozen(nil),
		"Snapshot.Export":         snap.Export(nil),
		"WriteExport": WriteExport(nil, snap.config, snap.MemSeq(), snap.SubFilters(), func(int, uint64, []byte) error {
			panic("read asked for counters with nowhere to write them")
		}),
	} {
		require.ErrorIs(t, err, ErrInvalidInput, name)
		assert.Contains(t, err.Error(), "a nil writer", name)
	}
	for _, r := range []io.Reader{nil, WholeStream(nil)} {
		_, err1 := Import(path, r, nil)
		_, err2 := ImportAs(path, r, true, nil)
		_, err3 := ReadExport(r)
		_, err4 := ReadFrozen(r)
		for i, err := range []error{err1, err2, err3, err4} {
			require.ErrorIs(t, err, ErrInvalidInput, "reader %d", i)
			assert.Contains(t, err.Error(), "a nil reader", "reader %d", i)
		}
	}
	err = WriteExport(io.Discard, snap.config, snap.MemSeq(), snap.SubFilters(), nil)
	require.ErrorIs(t, err, ErrInvalidInput)
	assert.Contains(t, err.Error(), "a nil read function")
	// Sub-filters whose counters would run to exabytes, or to none.
	for _, blocks := range []uint64{1 << 57, 0} {
		subs := slices.Clone(snap.SubFilters())
		subs[len(subs)-1].Blocks = blocks
		err = WriteExport(io.Discard, snap.config, snap.MemSeq(), subs, func(int, uint64, []byte) error { return nil })
		require.ErrorIs(t, err, ErrInvalidInput, "%d blocks", blocks)
		assert.Contains(t, err.Error(), fmt.Sprintf("sub-filter %d: counting: invalid geometry", len(subs)-1))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
	// The filters still export.
	require.NoError(t, f.Export(io.Discard))
	require.NoError(t, reader.Export(io.Discard))
}
