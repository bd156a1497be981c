package seqno

import "golang.org/x/sys/cpu"

// crc3 is the raw (not inverted) crc32c states of an undo record's three
// parts, run side by side: a from a checksum of zero over seq and count
// (little-endian) and the lead bytes at p, then the third bytes after them;
// b and c from zero over the third bytes after those, and the third after
// those. lead and third must be multiples of 8, and the bytes must lie
// within one allocation.
//
//go:noescape
func crc3(seq uint64, count uint32, p *byte, lead, third int) (a, b, c uint32)

// hasCRC3 is whether crc3 runs here: CRC32Q is SSE4.2's.
var hasCRC3 = cpu.X86.HasSSE42
