package seqno

import "golang.org/x/sys/cpu"

// crc3 is the raw (not inverted) crc32c state of an undo record from a
// checksum of zero: seq and count, little-endian, then count spans of
// spanSize bytes at p, which must lie within one allocation; plan is
// crcPlans[count].
//
//go:noescape
func crc3(seq uint64, count uint32, p *byte, plan *crcPlan) uint32

// hasCRC3 is whether crc3 runs here: CRC32Q is SSE4.2's, and the chains
// are joined with PCLMULQDQ.
var hasCRC3 = cpu.X86.HasSSE42 && cpu.X86.HasPCLMULQDQ
