package seqno

import "golang.org/x/sys/cpu"

// crc1 is the raw (not inverted) crc32c state of an undo record from a
// checksum of zero: seq and count, little-endian, then count spans of
// spanSize bytes at p, which must lie within one allocation.
//
//go:noescape
func crc1(seq uint64, count uint32, p *byte) uint32

// hasCRC1 is whether crc1 runs here: CRC32Q is SSE4.2's.
var hasCRC1 = cpu.X86.HasSSE42
