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
