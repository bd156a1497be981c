//go:build amd64 && !race

#include "textflag.h"

// The saturated test as saturatedBits has it, in a 16-byte lane of two
// counter words: X2 = w & w>>1, then X3 = X2 & X2>>2, whose low bit of
// each nibble is set where the counter is 15; then X3 = m &^ X3, the
// counters of the lane to change. Words go back with one 8-byte move each
// (MOVQ for the low word, MOVHPS for the high), in order, so that a reader
// loading a word sees it whole, as release.Store64 stores a word.
#define LANE(off, OP) \
	MOVOU off(DI), X0 \
	MOVOU off(SI), X1 \
	MOVO  X0, X2 \
	PSRLQ $1, X2 \
	PAND  X0, X2 \
	MOVO  X2, X3 \
	PSRLQ $2, X3 \
	PAND  X2, X3 \
	PANDN X1, X3 \
	OP    X3, X0 \
	MOVQ  X0, off(DI) \
	MOVHPS X0, off+8(DI)

// func raiseBlock(block, masks *[8]uint64)
TEXT ·raiseBlock(SB), NOSPLIT, $0-16
	MOVQ block+0(FP), DI
	MOVQ masks+8(FP), SI
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
