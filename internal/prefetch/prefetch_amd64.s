//go:build amd64

#include "textflag.h"

// func Line(addr unsafe.Pointer)
//
// PREFETCHT0 is a hint: it never faults, whatever addr is, and it retires
// without waiting for the line, where a load would hold the processor's
// window until the line came.
TEXT ·Line(SB), NOSPLIT, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	RET
