//go:build amd64 && !race

#include "textflag.h"

// func Store64(addr *uint64, val uint64)
//
// An aligned 8-byte move is atomic on amd64, and the processor makes stores
// visible in program order, so no fence is needed for release order. Being
// assembly, the call is opaque to the compiler, which keeps every Go load and
// store on its side of it.
TEXT ·Store64(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ val+8(FP), BX
	MOVQ BX, (AX)
	RET

// func StoreBlock(dst, src *[8]uint64)
//
// Eight moves, one word each and in order, as eight calls of Store64 would
// make them: a reader that loads a word sees it whole.
TEXT ·StoreBlock(SB), NOSPLIT, $0-16
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ 0(SI), AX
	MOVQ AX, 0(DI)
	MOVQ 8(SI), AX
	MOVQ AX, 8(DI)
	MOVQ 16(SI), AX
	MOVQ AX, 16(DI)
	MOVQ 24(SI), AX
	MOVQ AX, 24(DI)
	MOVQ 32(SI), AX
	MOVQ AX, 32(DI)
	MOVQ 40(SI), AX
	MOVQ AX, 40(DI)
	MOVQ 48(SI), AX
	MOVQ AX, 48(DI)
	MOVQ 56(SI), AX
	MOVQ AX, 56(DI)
	RET
