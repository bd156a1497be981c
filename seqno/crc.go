package seqno

// crcPlan is how crc3 splits the words of a record's spans into three
// chains, and the constants that carry the first two chains' states over
// the bytes after them.
type crcPlan struct {
	words uint64    // words in each of the first two chains
	rest  uint64    // words of the third past words
	carry [2]uint64 // for the first chain, then the second
}

// crcPlans is the plan for each span count.
var crcPlans = func() (plans [MaxSpans + 1]crcPlan) {
	for count := 1; count <= MaxSpans; count++ {
		total := uint64(count * spanSize / 8)
		words := total / 3
		plans[count] = crcPlan{
			words: words,
			rest:  total - 3*words,
			carry: [2]uint64{carryOver(8 * (total - words)), carryOver(8 * (total - 2*words))},
		}
	}
	return plans
}()

// carryOver is the constant that carries a crc32c state over n bytes: a
// state's carry-less product with it, reduced by a CRC32Q from zero, is
// the state after n more zero bytes. In the bit-reflected order crc32c
// keeps, that is x^(8n-33) modulo the polynomial; the 33 undoes the
// product's one-bit shift and the CRC32Q's multiply by x^32.
func carryOver(n uint64) uint64 {
	const poly = 0x82f63b78 // crc32c, bit-reflected
	x := uint32(1) << 31    // the polynomial 1
	for range 8*n - 33 {
		x = x>>1 ^ poly&-(x&1)
	}
	return uint64(x)
}
