//go:build unix && !race

// The race detector's atomic stores run outside Go code, where a fault
// cannot become a panic.

package seqno

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestStoreWritesTheSpareBeforeTheState cuts a Store short at its first
// write to the state: the state lies at the end of a page made read-only,
// its spare copy at the start of the next. By then the spare must hold
// the new state whole, and the state still the old.
func TestStoreWritesTheSpareBeforeTheState(t *testing.T) {
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	region := mem[page-StateSpare:][:StateAreaSize]
	a, err := NewStateArea(region)
	require.NoError(t, err)
	old, next := State{DurableSeq: 5}, State{Dirty: true, DurableSeq: 5, Boot: BootID{3}}
	a.Store(old)

	require.NoError(t, unix.Mprotect(mem[:page], unix.PROT_READ))
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	faulted := func() (faulted bool) {
		defer func() { faulted = recover() != nil }()
		a.Store(next)
		return false
	}()
	require.NoError(t, unix.Mprotect(mem[:page], unix.PROT_READ|unix.PROT_WRITE))
	require.True(t, faulted, "the Store wrote to the state's read-only page")

	spare, err := DecodeState(region[StateSpare:])
	require.NoError(t, err, "the spare is whole when the state's first write comes")
	assert.Equal(t, next, spare)
	state, err := DecodeState(region[:StateSize])
	require.NoError(t, err)
	assert.Equal(t, old, state)
}
