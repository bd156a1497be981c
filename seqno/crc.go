package seqno

import "hash/crc32"

// An undo record's checksum is on the path of every change, and crc32c of
// its bytes (172 for an add) is one chain of dependent CRC32Q steps: each
// waits for the one before it. Where it can, sideBySide cuts the record
// into three parts, runs their chains together (crc3), and joins the three
// states: a state carried over n zero bytes is a linear function of
// the state, which a table per part length applies with four lookups. The
// tables, one per number of spans, take 36 KiB and about 20 µs to build
// when the package is loaded on a processor that has CRC32Q.

// crcShift carries a raw crc32c state over a fixed number of zero bytes:
// the exclusive or of the images of the state's four bytes.
type crcShift [4][256]uint32

// newCRCShift is the crcShift over n zero bytes: the image of each of the
// 32 bits, and of every byte value the exclusive or of its bits' images.
func newCRCShift(n int) *crcShift {
	zeros := make([]byte, n)
	var t crcShift
	for k := range t {
		for v := 1; v < len(t[k]); v++ {
			if low := v & -v; low == v {
				bit := uint32(v) << (8 * k)
				t[k][v] = ^crc32.Update(^bit, castagnoli, zeros)
			} else {
				t[k][v] = t[k][v^low] ^ t[k][low]
			}
		}
	}
	return &t
}

func (t *crcShift) apply(s uint32) uint32 {
	return t[0][s&0xff] ^ t[1][s>>8&0xff] ^ t[2][s>>16&0xff] ^ t[3][s>>24]
}

// spanThird is the length of each of the three parts of count spans that
// crc3 runs side by side; the first part also takes the rest, under 24
// bytes, and the record's sequence and count before it.
func spanThird(count int) int { return count * spanSize / 24 * 8 }

// spanShifts[count] carries a state over spanThird(count) bytes.
var spanShifts = func() (s [MaxSpans + 1]*crcShift) {
	if hasCRC3 {
		for count := 1; count <= MaxSpans; count++ {
			s[count] = newCRCShift(spanThird(count))
		}
	}
	return s
}()

// sideBySide is the crc32c of an undo record of count spans, 1 to
// MaxSpans, where hasCRC3: its sequence and span count, little-endian, then
// spans, its used spans.
func sideBySide(seq uint64, count int, spans []byte) uint32 {
	third := spanThird(count)
	lead := len(spans) - 3*third
	a, b, c := crc3(seq, uint32(count), &spans[0], lead, third)
	shift := spanShifts[count]
	return ^(shift.apply(shift.apply(a)^b) ^ c)
}
