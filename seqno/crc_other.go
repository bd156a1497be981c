//go:build !amd64

package seqno

func crc3(seq uint64, count uint32, p *byte, plan *crcPlan) uint32 {
	panic("seqno: crc3 without CRC32Q")
}

// hasCRC3 is whether crc3 runs here: on amd64 only.
const hasCRC3 = false
