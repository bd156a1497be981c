//go:build !unix

package bench

// Where memory cannot be mapped outside the heap (see keyroom_unix.go), keys
// and their headers are ordinary allocations.

func keyRoom(n int) []byte { return make([]byte, n) }

func keyHeaders(n int) [][]byte { return make([][]byte, n) }
