package counting

import (
	"math/rand/v2"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

// libraryXXH64 is the seeded XXH64 of github.com/cespare/xxhash/v2, which the
// file format names: hashOf must agree with it bit for bit.
func libraryXXH64(seed uint64, b []byte) uint64 {
	d := xxhash.NewWithSeed(seed)
	_, _ = d.Write(b)
	return d.Sum64()
}

func TestSum64MatchesLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 300)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	seeds := []uint64{0, 1, 42, 1 << 63, ^uint64(0)}
	for range 20 {
		seeds = append(seeds, rng.Uint64())
	}
	// Every length through several 32-byte stripes and every tail: 8-byte
	// lanes, a 4-byte lane, single bytes.
	for _, seed := range seeds {
		for n := 0; n <= len(buf); n++ {
			key := buf[len(buf)-n:]
			require.Equal(t, libraryXXH64(seed, key), hashOf(seed, key).Sum, "seed %#x, %d bytes", seed, n)
		}
	}
}

func FuzzSum64(f *testing.F) {
	f.Add(uint64(0), []byte(""))
	f.Add(uint64(7), []byte("https://example.com/a/path/of/some/length"))
	f.Fuzz(func(t *testing.T, seed uint64, key []byte) {
		if got, want := hashOf(seed, key).Sum, libraryXXH64(seed, key); got != want {
			t.Fatalf("hashOf(%#x, %q) = %#x, library says %#x", seed, key, got, want)
		}
	})
}
