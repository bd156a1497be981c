//go:build arm64

#include "textflag.h"

// func Line(addr unsafe.Pointer)
//
// PRFM is a hint: it never faults, whatever addr is.
TEXT ·Line(SB), NOSPLIT, $0-8
	MOVD addr+0(FP), R0
	PRFM (R0), PLDL1KEEP
	RET
