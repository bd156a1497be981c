package bench

import (
	"bytes"
	"io"
	"testing"
	"unsafe"
)

// TestKeys holds the generated keys to what the benchmarks rely on: the same
// keys on every call, of 16 to 64 bytes, disjoint between sets, and lying
// one after another in memory, as every's packed copy does too.
func TestKeys(t *testing.T) {
	const n = 50_000 // more than one arena chunk
	members, again, others := Keys(n, 1), Keys(n, 1), Keys(n, 2)
	seen := map[string]bool{}
	for i, k := range members {
		if len(k) < 16 || len(k) > 64 {
			t.Fatalf("key %d has %d bytes", i, len(k))
		}
		if !bytes.Equal(k, again[i]) {
			t.Fatalf("key %d differs between calls", i)
		}
		seen[string(k)] = true
	}
	for i, k := range others {
		if seen[string(k)] {
			t.Fatalf("key %d of set 2 is also in set 1", i)
		}
	}
	picked := every(members, 20_000)
	for i, k := range picked {
		if !bytes.Equal(k, members[i*n/20_000]) {
			t.Fatalf("picked key %d is not member %d", i, i*n/20_000)
		}
	}
	for name, keys := range map[string][][]byte{"Keys": members, "every": picked} {
		if gaps := countGaps(keys); gaps > 2*len(keys)*48/arenaChunk+1 {
			t.Errorf("%s: %d of %d keys do not follow the one before", name, gaps, len(keys))
		}
	}
}

// countGaps counts keys that do not start where the key before them ends.
func countGaps(keys [][]byte) int {
	gaps := 0
	for i := 1; i < len(keys); i++ {
		end := uintptr(unsafe.Pointer(unsafe.SliceData(keys[i-1]))) + uintptr(len(keys[i-1]))
		if uintptr(unsafe.Pointer(unsafe.SliceData(keys[i]))) != end {
			gaps++
		}
	}
	return gaps
}

// TestNewKeyStepsPutTheFilterBack holds BenchmarkTestAndAddNew's undo to
// what the benchmark relies on: after a pass, every filter answers as it
// did before it, so every pass sees the same filter.
func TestNewKeyStepsPutTheFilterBack(t *testing.T) {
	members, probes, fresh := Keys(2000, 1), Keys(5000, 2), Keys(1000, 3)
	for _, lib := range testAndAdders() {
		t.Run(lib, func(t *testing.T) {
			subject, err := NewSubject(lib, 4000, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := subject.(io.Closer); ok {
				defer c.Close()
			}
			for _, k := range members {
				subject.Add(k)
			}
			testAndAdd, undo, contains := newKeySteps(subject)
			answers := func() (n int) {
				for _, k := range append(probes, fresh...) {
					if contains(k) {
						n++
					}
				}
				return n
			}
			before := answers()
			for range 3 {
				added := make([]bool, len(fresh))
				for i, k := range fresh {
					added[i] = testAndAdd(k)
				}
				for _, k := range fresh {
					if !contains(k) {
						t.Fatal("a key test-and-added is not found")
					}
				}
				undo(fresh, added)
				if got := answers(); got != before {
					t.Fatalf("after the undo %d probes are found, before %d", got, before)
				}
			}
			for _, k := range members {
				if !contains(k) {
					t.Fatal("the undo lost a member")
				}
			}
		})
	}
}
