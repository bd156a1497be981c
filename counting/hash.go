package counting

import "unsafe"

// Hash is a key hashed once per operation. Every sub-filter of a chain derives
// its block and counters from the same Hash, so a chain of any length costs one
// pass over the key.
type Hash struct {
	Sum     uint64 // seeded xxhash64 of the key
	Derived uint64 // a second, independent-looking hash derived from Sum
}

// Hasher hashes keys with a fixed seed. The zero Hasher uses seed 0.
type Hasher struct {
	seed uint64
}

// NewHasher returns a Hasher for seed. A filter stores its seed so that the
// same key always lands on the same counters, and a random seed keeps crafted
// collisions from being computed in advance.
func NewHasher(seed uint64) Hasher { return Hasher{seed: seed} }

// Key hashes key. It does not allocate.
func (h Hasher) Key(key []byte) Hash {
	countHash()
	return hashOf(h.seed, key)
}

// String hashes key like Key([]byte(key)) without converting it.
func (h Hasher) String(key string) Hash {
	countHash()
	// hashOf only reads the bytes.
	return hashOf(h.seed, unsafe.Slice(unsafe.StringData(key), len(key)))
}

func derive(sum uint64) Hash {
	return Hash{Sum: sum, Derived: mix(sum ^ 0x6a09e667f3bcc909)}
}

// mix is the splitmix64 finalizer: a bijection on 64 bits whose every output
// bit depends on every input bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
