package counting

import (
	"fmt"
	"testing"
)

func benchFilter(b *testing.B, n uint64, presence bool) (*Filter, Hasher, [][]byte) {
	g, err := Plan(n, 0.001)
	if err != nil {
		b.Fatal(err)
	}
	f, _ := newTestFilter(b, g, presence)
	h := NewHasher(11)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("https://example.com/%08d/page", i))
	}
	for i := range n {
		p := probe(f, h.Key(keys[i%uint64(len(keys))]))
		f.Increment(&p)
	}
	return f, h, keys
}

func BenchmarkHash(b *testing.B) {
	h := NewHasher(1)
	for _, size := range []int{16, 32, 64} {
		k := make([]byte, size)
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				_ = h.Key(k)
			}
		})
	}
}

func BenchmarkFilter(b *testing.B) {
	for _, c := range []struct {
		n        uint64
		presence bool
	}{{20_000, true}, {20_000, false}, {1_000_000, true}, {1_000_000, false}} { // in the cache, and not
		n := c.n
		f, h, keys := benchFilter(b, n, c.presence)
		b.Run(fmt.Sprintf("n=%d/presence=%v/Contains", n, c.presence), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f.Contains(h.Key(keys[i&(len(keys)-1)]))
				i++
			}
		})
		b.Run(fmt.Sprintf("n=%d/presence=%v/Freeze", n, c.presence), func(b *testing.B) {
			b.ReportAllocs()
			frozen := make([]byte, FrozenBytes(f.geometry))
			b.SetBytes(int64(len(frozen)))
			for b.Loop() {
				f.Freeze(frozen)
			}
		})
		b.Run(fmt.Sprintf("n=%d/presence=%v/IncrementDecrement", n, c.presence), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := probe(f, h.Key(keys[i&(len(keys)-1)]))
				f.Increment(&p)
				f.Decrement(&p)
				i++
			}
		})
	}
}

func BenchmarkPlan(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Plan(1_000_000, 0.001); err != nil {
			b.Fatal(err)
		}
	}
}
