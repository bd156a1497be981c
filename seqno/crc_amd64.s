#include "textflag.h"

// func crc3(seq uint64, count uint32, p *byte, lead, third int) (a, b, c uint32)
//
// The raw crc32c states of an undo record's three parts, from a checksum
// of zero: a over seq, count and the lead bytes at p then the third bytes
// after them, b over the third bytes after those, c over the third bytes
// after those, from zero. The three chains of CRC32Q run side by side.
// lead and third are multiples of 8.
TEXT ·crc3(SB), NOSPLIT, $0-52
	MOVL $0xffffffff, AX
	MOVQ seq+0(FP), R10
	CRC32Q R10, AX
	MOVL count+8(FP), R10
	CRC32L R10, AX
	MOVQ p+16(FP), SI
	MOVQ lead+24(FP), R8
	SHRQ $3, R8
	JZ   parts

lead:
	CRC32Q (SI), AX
	ADDQ   $8, SI
	DECQ   R8
	JNZ    lead

parts:
	XORL BX, BX
	XORL CX, CX
	MOVQ third+32(FP), DX
	LEAQ (SI)(DX*1), DI
	LEAQ (DI)(DX*1), R9
	MOVQ DX, R8
	SHRQ $3, R8
	JZ   done

loop:
	CRC32Q (SI), AX
	CRC32Q (DI), BX
	CRC32Q (R9), CX
	ADDQ   $8, SI
	ADDQ   $8, DI
	ADDQ   $8, R9
	DECQ   R8
	JNZ    loop

done:
	MOVL AX, a+40(FP)
	MOVL BX, b+44(FP)
	MOVL CX, c+48(FP)
	RET
