package seqno

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateRoundTrip(t *testing.T) {
	b := make([]byte, StateSize)
	s := State{Dirty: true, DurableSeq: 1234, Boot: BootID{1, 2, 3}}
	s.Encode(b)
	got, err := DecodeState(b)
	require.NoError(t, err)
	assert.Equal(t, s, got)

	for i := range b {
		damaged := append([]byte(nil), b...)
		damaged[i] ^= 0x40
		_, err := DecodeState(damaged)
		assert.ErrorIs(t, err, ErrCorrupt, "byte %d", i)
	}
	_, err = DecodeState(b[:10])
	assert.ErrorIs(t, err, ErrCorrupt)
}

func TestOutcome(t *testing.T) {
	this, other := BootID{1}, BootID{2}
	assert.Equal(t, Clean, State{}.Outcome(this, true))
	assert.Equal(t, Clean, State{Boot: other}.Outcome(this, true))
	assert.Equal(t, ProcessCrash, State{Dirty: true, Boot: this}.Outcome(this, true))
	assert.Equal(t, MachineCrash, State{Dirty: true, Boot: other}.Outcome(this, true))
	assert.Equal(t, MachineCrash, State{Dirty: true, Boot: this}.Outcome(this, false),
		"without a boot id a dirty file is never assumed whole")
}

func TestBootTimeIDTellsBootsApart(t *testing.T) {
	first, err := bootTimeID(1764547200, 123456)
	require.NoError(t, err)
	again, err := bootTimeID(1764547200, 123456)
	require.NoError(t, err)
	assert.Equal(t, first, again, "one boot, one id")
	assert.NotEqual(t, BootID{}, first, "a clean state's boot is zero; a dirty one's never is")
	for _, later := range [][2]int64{{1764547200, 123457}, {1764547201, 123456}, {1764547200, 999_999_999}} {
		id, err := bootTimeID(later[0], later[1])
		require.NoError(t, err)
		assert.NotEqual(t, first, id, "a boot that began at %d.%d", later[0], later[1])
	}
	for _, bad := range [][2]int64{{0, 0}, {0, 5}, {-1, 0}, {1764547200, -1}} {
		_, err := bootTimeID(bad[0], bad[1])
		assert.ErrorIs(t, err, ErrNoBootID, "boot time %v", bad)
	}
}

func TestParseBootID(t *testing.T) {
	id, err := ParseBootID("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9\n")
	require.NoError(t, err)
	assert.Equal(t, BootID{0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5, 0xc6, 0xd7, 0xe8, 0xf9}, id)
	for _, bad := range []string{"", "xyz", "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8fz"} {
		_, err := ParseBootID(bad)
		assert.ErrorIs(t, err, ErrNoBootID)
	}
}

func newJournal(t *testing.T) (*Journal, []byte) {
	t.Helper()
	region := make([]byte, JournalSize)
	j, err := NewJournal(region)
	require.NoError(t, err)
	return j, region
}

func TestCommittedChangeLeavesNothingPending(t *testing.T) {
	j, _ := newJournal(t)
	for i := range 3 {
		j.Begin()
		j.Save(1, 64, []byte{byte(i)})
		j.Seal()
		j.Commit()
		assert.Equal(t, uint64(i+1), j.MemSeq())
	}
	_, pending, err := j.Pending()
	require.NoError(t, err)
	assert.False(t, pending)
}

func TestSealedButUncommittedChangeIsPending(t *testing.T) {
	j, region := newJournal(t)
	j.Reset(41)
	j.Begin()
	j.Save(7, 128, []byte("prior block bytes"))
	j.Save(0, 8, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	j.Seal()
	spans, pending, err := j.Pending()
	require.NoError(t, err)
	require.True(t, pending)
	assert.Equal(t, []Span{
		{Area: 7, Offset: 128, Prior: []byte("prior block bytes")},
		{Area: 0, Offset: 8, Prior: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
	}, spans)
	assert.Equal(t, uint64(41), j.MemSeq(), "an uncommitted change does not count")

	// A record damaged on disk is reported, never applied.
	region[undoSpans+spanBytes] ^= 1
	_, _, err = j.Pending()
	assert.ErrorIs(t, err, ErrCorrupt)

	j.Reset(41)
	_, pending, err = j.Pending()
	require.NoError(t, err)
	assert.False(t, pending, "Reset forgets the record")
}

func TestAFullRecordIsTakenBackWhole(t *testing.T) {
	// The largest record the format holds reads back as it was: every span
	// used, as a flat sub-filter's change uses them, and each as long as a
	// block, as a blocked change's first span is. Each is read from an
	// odd address: Save copies a span wherever it lies.
	j, _ := newJournal(t)
	j.Begin()
	var want []Span
	for i := range MaxSpans {
		prior := make([]byte, 1+MaxSpanBytes)[1:]
		for b := range prior {
			prior[b] = byte(i*MaxSpanBytes + b + 1)
		}
		j.Save(uint32(i), uint64(i)*MaxSpanBytes, prior)
		want = append(want, Span{Area: uint32(i), Offset: uint64(i) * MaxSpanBytes, Prior: prior})
	}
	j.Seal()
	spans, pending, err := j.Pending()
	require.NoError(t, err)
	require.True(t, pending)
	assert.Equal(t, want, spans)
}

func TestAShortSpanLeavesTheRestOfItsRoomZero(t *testing.T) {
	// The format keeps a span's room past its length zero, so a record
	// reads the same whatever records came before it in that room.
	j, region := newJournal(t)
	j.Begin()
	j.Save(1, 0, bytes.Repeat([]byte{0xff}, MaxSpanBytes))
	j.Seal()
	j.Commit()
	j.Begin()
	j.Save(1, 0, []byte{7, 7, 7})
	j.Seal()
	room := region[undoSpans+spanBytes:][:MaxSpanBytes]
	assert.Equal(t, []byte{7, 7, 7}, room[:3])
	assert.Equal(t, make([]byte, MaxSpanBytes-3), room[3:], "the room past a span's length")
}

func TestUnsealedRecordIsNotPending(t *testing.T) {
	j, _ := newJournal(t)
	j.Begin()
	j.Save(1, 0, []byte{9})
	j.Seal()
	j.Commit()
	// The next change dies while writing its record: before Seal, nothing
	// was written to the counters, so there is nothing to undo.
	j.Begin()
	j.Save(1, 0, []byte{8})
	_, pending, err := j.Pending()
	require.NoError(t, err)
	assert.False(t, pending)
}

func TestNewJournalRejectsShortRegion(t *testing.T) {
	_, err := NewJournal(make([]byte, JournalSize-1))
	assert.ErrorIs(t, err, ErrCorrupt)
	_, err = NewJournal(make([]byte, JournalSize+1)[1:])
	assert.ErrorIs(t, err, ErrCorrupt)
}

func TestSaveBeyondTheRecordIsABug(t *testing.T) {
	j, _ := newJournal(t)
	j.Begin()
	assert.Panics(t, func() { j.Save(0, 0, make([]byte, MaxSpanBytes+1)) })
	for range MaxSpans {
		j.Save(0, 0, nil)
	}
	assert.Panics(t, func() { j.Save(0, 0, nil) })
}

func FuzzDecodeState(f *testing.F) {
	b := make([]byte, StateSize)
	State{Dirty: true, DurableSeq: 9}.Encode(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := DecodeState(raw)
		if err != nil {
			assert.Equal(t, State{}, s, "an error comes with no value")
			return
		}
		again := make([]byte, StateSize)
		s.Encode(again)
		assert.Equal(t, raw[:StateSize], again, "a decoded state encodes to the same bytes")
	})
}

func FuzzJournalPending(f *testing.F) {
	region := make([]byte, JournalSize)
	j, _ := NewJournal(region)
	j.Begin()
	j.Save(3, 64, []byte("seed"))
	j.Seal()
	f.Add(append([]byte(nil), region...))
	f.Fuzz(func(t *testing.T, raw []byte) {
		region := make([]byte, JournalSize)
		copy(region, raw)
		j, err := NewJournal(region)
		require.NoError(t, err)
		spans, pending, err := j.Pending()
		if err != nil {
			assert.False(t, pending)
			assert.Nil(t, spans)
			return
		}
		for _, s := range spans {
			assert.LessOrEqual(t, len(s.Prior), MaxSpanBytes)
		}
	})
}

// A state whose checksum holds but whose flags the format does not know is
// damage, not a dirty or clean state.
func TestStateWithUnknownFlagsIsCorrupt(t *testing.T) {
	for _, flags := range []struct{ low, high uint32 }{{2, 0}, {1, 1}} {
		b := make([]byte, StateSize)
		State{Dirty: true, DurableSeq: 7}.Encode(b)
		binary.LittleEndian.PutUint32(b[stateDirty:], flags.low)
		binary.LittleEndian.PutUint32(b[stateDirty+4:], flags.high)
		binary.LittleEndian.PutUint32(b[stateCRC:], crc32.Checksum(b[:stateCRC], castagnoli))
		_, err := DecodeState(b)
		assert.ErrorIs(t, err, ErrCorrupt, "%v", flags)
		assert.ErrorContains(t, err, fmt.Sprintf("state flags %d", flags.low))
	}
}

// A pending record whose span count or span length is past what the
// format holds is damage, whatever its checksum says.
func TestARecordPastTheFormatsBoundsIsCorrupt(t *testing.T) {
	j, region := newJournal(t)
	j.Reset(5)
	j.Begin()
	j.Save(1, 0, []byte("prior"))
	j.Seal()

	count := append([]byte(nil), region...)
	binary.LittleEndian.PutUint32(count[undoCount:], MaxSpans+1)
	damaged, err := NewJournal(count)
	require.NoError(t, err)
	_, pending, err := damaged.Pending()
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, fmt.Sprintf("undo record of %d spans", MaxSpans+1))
	assert.False(t, pending)

	long := append([]byte(nil), region...)
	binary.LittleEndian.PutUint32(long[undoSpans+spanLength:], MaxSpanBytes+1)
	damaged, err = NewJournal(long)
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(long[undoCRC:], damaged.checksum(6, 1)) // a checksum that holds
	_, pending, err = damaged.Pending()
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, fmt.Sprintf("undo span of %d bytes", MaxSpanBytes+1))
	assert.False(t, pending)
}
