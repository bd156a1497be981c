package engine

import (
	"sync"
	"testing"
)

// benchFilter is a filter of n keys at 1%, the size the peers are compared at.
func benchFilter(b *testing.B, n uint64) *Filter {
	b.Helper()
	f, err := Create(tempPath(b), Config{Capacity: n, ErrorRate: 0.01, Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	for i := range n {
		if err := f.Add(key(i), 1); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

const benchKeys = 1 << 20 // key(i) for i < benchKeys, built once per benchmark

func benchKeySet(offset uint64) [][]byte { return keysFrom(offset, offset+benchKeys) }

func BenchmarkContains(b *testing.B) {
	const n = 1_000_000
	f := benchFilter(b, n)
	for _, c := range []struct {
		name string
		keys [][]byte
	}{{"member", benchKeySet(0)}, {"non-member", benchKeySet(1 << 40)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.keys[0])))
			i := 0
			for b.Loop() {
				f.Contains(c.keys[i&(benchKeys-1)])
				i++
			}
		})
	}
}

func BenchmarkContainsBatch(b *testing.B) {
	f := benchFilter(b, 1_000_000)
	keys := benchKeySet(0)
	out := make([]bool, 0, 1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := (i * 1024) & (benchKeys - 1)
		out = f.ContainsBatch(keys[start:start+1024], out)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1024), "ns/key")
}

// BenchmarkContainsParallel runs Contains from every core, lock-free and,
// as a baseline, behind a mutex.
func BenchmarkContainsParallel(b *testing.B) {
	f := benchFilter(b, 1_000_000)
	keys := benchKeySet(0)
	var mu sync.Mutex
	for _, locked := range []bool{false, true} {
		b.Run(map[bool]string{false: "lock-free", true: "mutex"}[locked], func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if locked {
						mu.Lock()
					}
					f.Contains(keys[i&(benchKeys-1)])
					if locked {
						mu.Unlock()
					}
					i++
				}
			})
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	f, err := Create(tempPath(b), Config{Capacity: 1_000_000, ErrorRate: 0.01, Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	keys := benchKeySet(0)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		if err := f.Add(keys[i&(benchKeys-1)], i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkRemove(b *testing.B) {
	f, err := Create(tempPath(b), Config{Capacity: uint64(max(b.N, 1_000_000)), ErrorRate: 0.01, Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for i := range b.N {
		if err := f.Add(key(uint64(i)), 1); err != nil {
			b.Fatal(err)
		}
	}
	keys := keysFrom(0, uint64(b.N))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := f.Remove(keys[i], 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTestAndAdd(b *testing.B) {
	f, err := Create(tempPath(b), Config{Capacity: 1_000_000, ErrorRate: 0.01, Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	keys := benchKeySet(0)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		if _, err := f.TestAndAdd(keys[i&(benchKeys-1)], i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkOpen opens filters of 1 MiB and 1 GiB of counters: the cost must
// not grow with the size.
func BenchmarkOpen(b *testing.B) {
	for _, size := range []struct {
		name     string
		capacity uint64
	}{{"1MiB", 110_000}, {"1GiB", 115_000_000}} {
		path := tempPath(b)
		f, err := Create(path, Config{Capacity: size.capacity, ErrorRate: 0.01, Growth: 1, Seed: 1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		bytes := f.Stats().CounterBytes
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		b.Run(size.name, func(b *testing.B) {
			b.ReportMetric(float64(bytes)/(1<<20), "MiB")
			b.ReportAllocs()
			for b.Loop() {
				g, err := Open(path, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
