#include "textflag.h"

// func crc3(seq uint64, count uint32, p *byte, plan *crcPlan) uint32
//
// The raw crc32c state of an undo record from a checksum of zero: seq and
// count, then count spans of 80 bytes at p. The spans' words run as three
// chains of CRC32Q side by side: the first from the state after seq and
// count, over plan.words words; the second and third from zero, over the
// next plan.words and the rest. The first two are then carried over the
// bytes after them (a carry-less multiply by plan.carry, reduced by one
// CRC32Q) and the three states joined by exclusive or.
TEXT ·crc3(SB), NOSPLIT, $0-36
	MOVL $0xffffffff, AX
	MOVQ seq+0(FP), R10
	CRC32Q R10, AX
	MOVL count+8(FP), CX
	CRC32L CX, AX
	TESTL CX, CX
	JZ   done
	MOVQ p+16(FP), SI
	MOVQ plan+24(FP), DI
	MOVQ 0(DI), CX
	LEAQ (SI)(CX*8), R11
	LEAQ (R11)(CX*8), R12
	XORL BX, BX
	XORL DX, DX

chains:
	CRC32Q 0(SI), AX
	CRC32Q 0(R11), BX
	CRC32Q 0(R12), DX
	ADDQ   $8, SI
	ADDQ   $8, R11
	ADDQ   $8, R12
	DECQ   CX
	JNZ    chains

	MOVQ 8(DI), CX
	TESTQ CX, CX
	JZ   join

rest:
	CRC32Q 0(R12), DX
	ADDQ   $8, R12
	DECQ   CX
	JNZ    rest

join:
	MOVQ      AX, X0
	MOVQ      16(DI), X1
	PCLMULQDQ $0x00, X1, X0
	MOVQ      BX, X2
	MOVQ      24(DI), X3
	PCLMULQDQ $0x00, X3, X2
	MOVQ      X0, R8
	MOVQ      X2, R9
	XORL      AX, AX
	CRC32Q    R8, AX
	XORL      BX, BX
	CRC32Q    R9, BX
	XORL      BX, AX
	XORL      DX, AX

done:
	MOVL AX, ret+32(FP)
	RET
