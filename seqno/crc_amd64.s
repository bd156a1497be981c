#include "textflag.h"

// func crc1(seq uint64, count uint32, p *byte) uint32
//
// The raw crc32c state of an undo record from a checksum of zero: seq and
// count, then count spans of 80 bytes at p, one chain of CRC32Q a span per
// turn of the loop.
TEXT ·crc1(SB), NOSPLIT, $0-28
	MOVL $0xffffffff, AX
	MOVQ seq+0(FP), R10
	CRC32Q R10, AX
	MOVL count+8(FP), CX
	CRC32L CX, AX
	MOVQ p+16(FP), SI
	TESTL CX, CX
	JZ   done

span:
	CRC32Q 0(SI), AX
	CRC32Q 8(SI), AX
	CRC32Q 16(SI), AX
	CRC32Q 24(SI), AX
	CRC32Q 32(SI), AX
	CRC32Q 40(SI), AX
	CRC32Q 48(SI), AX
	CRC32Q 56(SI), AX
	CRC32Q 64(SI), AX
	CRC32Q 72(SI), AX
	ADDQ   $80, SI
	DECL   CX
	JNZ    span

done:
	MOVL AX, ret+24(FP)
	RET
