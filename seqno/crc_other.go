//go:build !amd64

package seqno

func crc1(seq uint64, count uint32, p *byte) uint32 {
	panic("seqno: crc1 without CRC32Q")
}

// hasCRC1 is whether crc1 runs here: on amd64 only.
const hasCRC1 = false
