package seqno

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unsafeBytes is words as bytes: a region 8-byte aligned.
func unsafeBytes(words []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), 8*len(words))
}

// stateRegion is a zeroed region for a StateArea, 8-byte aligned.
func stateRegion() []byte {
	return unsafeBytes(make([]uint64, (StateAreaSize+7)/8))[:StateAreaSize]
}

// newStateArea returns a StateArea over a fresh region.
func newStateArea(t *testing.T) (*StateArea, []byte) {
	t.Helper()
	region := stateRegion()
	a, err := NewStateArea(region)
	require.NoError(t, err)
	return a, region
}

func TestStateAreaRoundTrip(t *testing.T) {
	a, region := newStateArea(t)
	for _, s := range []State{{}, {Dirty: true, DurableSeq: 41, Boot: BootID{7, 8}}, {DurableSeq: 1 << 40}} {
		a.Store(s)
		got, spare, err := a.Load()
		require.NoError(t, err)
		assert.Equal(t, s, got)
		assert.False(t, spare)
		assert.Equal(t, region[:StateSize], region[StateSpare:], "the spare copy is the state's")
		assert.Equal(t, make([]byte, StateSpare-StateSize), region[StateSize:StateSpare], "the room between stays zero")
	}
}

func TestNewStateAreaRefusesAShortOrMisalignedRegion(t *testing.T) {
	words := make([]uint64, StateAreaSize/8+2)
	_, err := NewStateArea(unsafeBytes(words)[:StateAreaSize-1])
	assert.ErrorIs(t, err, ErrCorrupt)
	_, err = NewStateArea(unsafeBytes(words)[4:])
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, "not 8-byte aligned")
}

// TestAStoreCutShortLeavesAWholeState: a process killed during a Store
// leaves some of the new bytes written and the rest old, in the spare
// copy while Store writes it, else in the state (over a whole state,
// Store writes the spare whole first; TestAStoreWritesOneCopyWholeFirst
// shows it). Whichever bytes those are, Load returns the old state or the
// new one, never an error, and says whether it read the spare.
func TestAStoreCutShortLeavesAWholeState(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	this := BootID{0xb0, 0x07}
	for _, tr := range []struct {
		name     string
		from, to State
	}{
		{"dirty mark", State{DurableSeq: 90}, State{Dirty: true, DurableSeq: 90, Boot: this}},
		{"flush", State{Dirty: true, DurableSeq: 90, Boot: this}, State{DurableSeq: 1_234}},
		{"mark taken back", State{Dirty: true, DurableSeq: 90, Boot: this}, State{DurableSeq: 90}},
	} {
		var from, to [StateSize]byte
		tr.from.Encode(from[:])
		tr.to.Encode(to[:])
		// Which of a copy's bytes the cut Store had written: every
		// prefix and every suffix, and random subsets.
		var cuts [][]bool
		for n := range StateSize + 1 {
			prefix, suffix := make([]bool, StateSize), make([]bool, StateSize)
			for i := range n {
				prefix[i], suffix[StateSize-1-i] = true, true
			}
			cuts = append(cuts, prefix, suffix)
		}
		for range 2_000 {
			subset := make([]bool, StateSize)
			for i := range subset {
				subset[i] = rng.IntN(2) == 0
			}
			cuts = append(cuts, subset)
		}
		for _, written := range cuts {
			torn := from
			for i, w := range written {
				if w {
					torn[i] = to[i]
				}
			}
			for _, stage := range []struct {
				name         string
				state, spare [StateSize]byte
			}{{"in the spare", from, torn}, {"in the state", torn, to}} {
				a, region := newStateArea(t)
				copy(region, stage.state[:])
				copy(region[StateSpare:], stage.spare[:])
				got, spare, err := a.Load()
				require.NoError(t, err, "%s, cut %s: %v", tr.name, stage.name, written)
				require.Contains(t, []State{tr.from, tr.to}, got, "%s, cut %s: %v", tr.name, stage.name, written)
				_, stateErr := DecodeState(stage.state[:])
				assert.Equal(t, stateErr != nil, spare, "%s, cut %s: %v", tr.name, stage.name, written)
			}
		}
	}
}

// TestLoadOfTwoBrokenCopiesIsCorrupt: with neither copy whole the area is
// damage, and the error says why each failed.
func TestLoadOfTwoBrokenCopiesIsCorrupt(t *testing.T) {
	a, region := newStateArea(t)
	a.Store(State{Dirty: true, DurableSeq: 3})
	region[5] ^= 1
	got, spare, err := a.Load()
	require.NoError(t, err)
	assert.True(t, spare)
	assert.Equal(t, State{Dirty: true, DurableSeq: 3}, got)

	region[StateSpare+20] ^= 1
	got, spare, err = a.Load()
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.EqualError(t, err, "seqno: corrupt: state checksum mismatch; its spare copy: state checksum mismatch")
	assert.Equal(t, State{}, got)
	assert.False(t, spare)
}

// A Store after a Load from the spare makes both copies whole again.
func TestStoreMendsTheState(t *testing.T) {
	a, region := newStateArea(t)
	a.Store(State{DurableSeq: 8})
	region[10] ^= 0xff
	s, spare, err := a.Load()
	require.NoError(t, err)
	require.True(t, spare)
	a.Store(s)
	got, spare, err := a.Load()
	require.NoError(t, err)
	assert.False(t, spare)
	assert.Equal(t, State{DurableSeq: 8}, got)
	assert.True(t, bytes.Equal(region[:StateSize], region[StateSpare:]))
}

func FuzzStateAreaLoad(f *testing.F) {
	region := stateRegion()
	a, _ := NewStateArea(region)
	a.Store(State{Dirty: true, DurableSeq: 9})
	f.Add(bytes.Clone(region))
	region[2] ^= 1
	f.Add(bytes.Clone(region))
	f.Fuzz(func(t *testing.T, raw []byte) {
		region := stateRegion()
		copy(region, raw)
		a, err := NewStateArea(region)
		require.NoError(t, err)
		s, spare, err := a.Load()
		if err != nil {
			assert.Equal(t, State{}, s, "an error comes with no value")
			assert.False(t, spare)
			return
		}
		from := region[:StateSize]
		if spare {
			from = region[StateSpare:]
			_, err := DecodeState(region[:StateSize])
			assert.Error(t, err, "the spare is read only when the state does not decode")
		}
		again := make([]byte, StateSize)
		s.Encode(again)
		assert.Equal(t, from, again, "the state comes from the copy Load names")
	})
}

// Store runs as the first change after a flush begins: it allocates
// nothing.
func TestStoreAllocatesNothing(t *testing.T) {
	a, _ := newStateArea(t)
	s := State{Dirty: true, DurableSeq: 12}
	assert.Zero(t, testing.AllocsPerRun(100, func() { a.Store(s) }))
}
