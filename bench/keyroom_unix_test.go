//go:build unix

package bench

import (
	"runtime"
	"testing"
)

// TestKeysLieOutsideTheHeap holds keys and their headers outside what the
// collector scans (see keyRoom): a million keys, about 64 MB with their
// headers, add next to nothing to the heap.
func TestKeysLieOutsideTheHeap(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	keys := Keys(1<<20, 7)
	packed := Packed(keys[:1<<19])
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4<<20 {
		t.Errorf("the heap grew by %d bytes for %d keys", grew, len(keys)+len(packed))
	}
	runtime.KeepAlive(keys)
	runtime.KeepAlive(packed)
}
