package seqno

// An undo record's checksum is on the path of every change: crc32c of its
// sequence, span count and spans, 172 bytes for an add. Where the processor
// has CRC32Q, crc1 runs it as one chain, a span of ten CRC32Q steps a turn
// of its loop, with none of hash/crc32's dispatch: 14 to 16 ns for an add's
// record on an AMD EPYC, where three chains side by side, joined with
// tables that carry a state over the bytes after it, took 23 to 25 (the
// joining costs more than the chain's wait). Elsewhere hash/crc32 computes
// the same checksum.
