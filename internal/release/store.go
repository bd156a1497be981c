package release

import "sync/atomic"

// Add64 adds delta to the word at addr and stores the sum with release
// order. Only one goroutine may write the word, in any process: two writers
// at once would lose one's add.
func Add64(addr *uint64, delta uint64) {
	Store64(addr, atomic.LoadUint64(addr)+delta)
}
