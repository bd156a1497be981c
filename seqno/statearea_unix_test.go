//go:build unix && !race

// The race detector's atomic stores run outside Go code, where a fault
// cannot become a panic.

package seqno

import (
	"bytes"
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// storeIntoReadOnly runs a.Store(s) with page of mem read-only, and
// reports whether the Store faulted there, as a kill at that write would
// stop it.
func storeIntoReadOnly(t *testing.T, a *StateArea, s State, page []byte) (faulted bool) {
	t.Helper()
	require.NoError(t, unix.Mprotect(page, unix.PROT_READ))
	defer func() {
		faulted = recover() != nil
		require.NoError(t, unix.Mprotect(page, unix.PROT_READ|unix.PROT_WRITE))
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	a.Store(s)
	return false
}

// TestAStoreWritesOneCopyWholeFirst cuts Stores short at their first
// write to one copy: the state lies at the end of a page, its spare at
// the start of the next, and one page is read-only. Over a whole state,
// Store writes the spare first; over a state that does not decode, the
// state first, since the spare may be the only whole copy. When the
// second copy's first write comes, the first must hold the new state
// whole, and the second its old content.
func TestAStoreWritesOneCopyWholeFirst(t *testing.T) {
	size := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	region := mem[size-StateSpare:][:StateAreaSize]
	statePage, sparePage := mem[:size], mem[size:]
	a, err := NewStateArea(region)
	require.NoError(t, err)
	old, next := State{DurableSeq: 5}, State{Dirty: true, DurableSeq: 5, Boot: BootID{3}}

	a.Store(old)
	require.True(t, storeIntoReadOnly(t, a, next, statePage), "the Store wrote to the state")
	spare, err := DecodeState(region[StateSpare:])
	require.NoError(t, err, "the spare is whole when the state's first write comes")
	assert.Equal(t, next, spare)
	state, err := DecodeState(region[:StateSize])
	require.NoError(t, err)
	assert.Equal(t, old, state)

	a.Store(old)
	region[20] ^= 1 // a state left half written
	spareBefore := bytes.Clone(region[StateSpare:])
	require.True(t, storeIntoReadOnly(t, a, next, sparePage), "the Store wrote to the spare")
	state, err = DecodeState(region[:StateSize])
	require.NoError(t, err, "over a state that does not decode, the state is whole when the spare's first write comes")
	assert.Equal(t, next, state)
	assert.Equal(t, spareBefore, region[StateSpare:], "the spare is as it was")
}
