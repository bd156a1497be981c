package counting

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// XXH64's primes, from the algorithm's published specification.
const (
	prime1 uint64 = 0x9e3779b185ebca87
	prime2 uint64 = 0xc2b2ae3d27d4eb4f
	prime3 uint64 = 0x165667b19e3779f9
	prime4 uint64 = 0x85ebca77c2b2ae63
	prime5 uint64 = 0x27d4eb2f165667c5
)

// hashOf is the Hash of b: its Sum is XXH64 of b with seed, in one pass and
// without a digest's buffer (the seeded digest of github.com/cespare/xxhash/v2
// copies short keys into its buffer and costs twice as much per key). The
// tests hold the two equal for every length a key can take up to several
// stripes, with many seeds. It derives the second hash itself, so that its
// callers are small enough to inline and a lookup makes one call to hash.
func hashOf(seed uint64, b []byte) Hash {
	n, p := len(b), unsafe.Pointer(unsafe.SliceData(b))
	var h uint64
	i := 0
	if n >= 32 {
		v1 := seed + prime1 + prime2
		v2 := seed + prime2
		v3 := seed
		v4 := seed - prime1
		for ; i+32 <= n; i += 32 {
			v1 = round(v1, le64(p, i))
			v2 = round(v2, le64(p, i+8))
			v3 = round(v3, le64(p, i+16))
			v4 = round(v4, le64(p, i+24))
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) +
			bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		h = mergeRound(h, v1)
		h = mergeRound(h, v2)
		h = mergeRound(h, v3)
		h = mergeRound(h, v4)
	} else {
		h = seed + prime5
	}
	h += uint64(n)

	// Loads at an index the loop bounds, rather than reslicing: a step is
	// then one add, where a reslice also keeps the pointer within the array
	// and a checked index tests it again.
	for ; i+8 <= n; i += 8 {
		h ^= round(0, le64(p, i))
		h = bits.RotateLeft64(h, 27)*prime1 + prime4
	}
	if i+4 <= n {
		h ^= uint64(binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(p, i))[:])) * prime1
		h = bits.RotateLeft64(h, 23)*prime2 + prime3
		i += 4
	}
	for ; i < n; i++ {
		h ^= uint64(*(*byte)(unsafe.Add(p, i))) * prime5
		h = bits.RotateLeft64(h, 11) * prime1
	}

	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return derive(h)
}

// le64 is the little-endian word at p+i; the caller keeps it within the key.
func le64(p unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(p, i))[:])
}

func round(acc, lane uint64) uint64 {
	acc += lane * prime2
	return bits.RotateLeft64(acc, 31) * prime1
}

func mergeRound(acc, v uint64) uint64 {
	acc ^= round(0, v)
	return acc*prime1 + prime4
}
