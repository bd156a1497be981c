//go:build amd64 && !race

#include "textflag.h"

// LOAD loads a 16-byte lane of two counter words into X0 and their masks
// into X1.
#define LOAD(off) \
	MOVOU off(DI), X0 \
	MOVOU off(SI), X1

// FLAGGED folds each nibble's bits of the lane in X0 into its low bit with
// OP: X2 = w OP w>>1, then X3 = X2 OP X2>>2. With PAND that is
// saturatedBits' test, whose low bit of each nibble is set where the
// counter is 15; with POR, nonZero's, set where it is not 0. Then
// X3 = m &^ X3: the flagged counters that are not saturated, or that are
// zero.
#define FLAGGED(OP) \
	MOVO  X0, X2 \
	PSRLQ $1, X2 \
	OP    X0, X2 \
	MOVO  X2, X3 \
	PSRLQ $2, X3 \
	OP    X2, X3 \
	PANDN X1, X3

// CHANGE adds (OP PADDQ) or subtracts (PSUBQ) one to the flagged counters
// of the loaded lane that are not saturated. Words go back with one 8-byte
// move each (MOVQ for the low word, MOVHPS for the high), in order, so
// that a reader loading a word sees it whole, as release.Store64 stores a
// word.
#define CHANGE(off, OP) \
	FLAGGED(PAND) \
	OP    X3, X0 \
	MOVQ  X0, off(DI) \
	MOVHPS X0, off+8(DI)

#define LANE(off, OP) \
	LOAD(off) \
	CHANGE(off, OP)

// func raiseBlock(block, masks *[8]uint64, presence, set *[2]uint64) (was [2]uint64)
//
// The presence bits, when there are any, are set first, before the
// counters they stand for (see Filter.Increment): two 8-byte moves, like
// the counters'.
TEXT ·raiseBlock(SB), NOSPLIT, $0-48
	MOVQ block+0(FP), DI
	MOVQ masks+8(FP), SI
	MOVQ presence+16(FP), DX
	XORQ AX, AX
	XORQ BX, BX
	TESTQ DX, DX
	JZ   counters
	MOVQ set+24(FP), CX
	MOVQ 0(DX), AX
	MOVQ 8(DX), BX
	MOVQ 0(CX), R8
	MOVQ 8(CX), R9
	ORQ  AX, R8
	ORQ  BX, R9
	MOVQ R8, 0(DX)
	MOVQ R9, 8(DX)

counters:
	MOVQ AX, was_0+32(FP)
	MOVQ BX, was_1+40(FP)
	LANE(0, PADDQ)
	LANE(16, PADDQ)
	LANE(32, PADDQ)
	LANE(48, PADDQ)
	RET

// func lowerBlock(block, masks *[8]uint64)
TEXT ·lowerBlock(SB), NOSPLIT, $0-16
	MOVQ block+0(FP), DI
	MOVQ masks+8(FP), SI
	LANE(0, PSUBQ)
	LANE(16, PSUBQ)
	LANE(32, PSUBQ)
	LANE(48, PSUBQ)
	RET

// RAISE_ZEROS ORs into X5 the flagged counters of the loaded lane that are
// zero, shifted left by shift: lane i by i, so that the four lanes' flags,
// each the low bit of a nibble, fold into one 16-byte value without
// meeting. Then it raises the lane, from the same load.
#define RAISE_ZEROS(off, shift) \
	LOAD(off) \
	FLAGGED(POR) \
	PSLLQ $shift, X3 \
	POR   X3, X5 \
	CHANGE(off, PADDQ)

// func raiseBlockZeros(block, masks *[8]uint64) (zeros [2]uint64)
TEXT ·raiseBlockZeros(SB), NOSPLIT, $0-32
	MOVQ block+0(FP), DI
	MOVQ masks+8(FP), SI
	PXOR X5, X5
	RAISE_ZEROS(0, 0)
	RAISE_ZEROS(16, 1)
	RAISE_ZEROS(32, 2)
	RAISE_ZEROS(48, 3)
	MOVQ X5, zeros_0+16(FP)
	PSRLDQ $8, X5
	MOVQ X5, zeros_1+24(FP)
	RET
