//go:build amd64 && !race

#include "textflag.h"

// slotStep and sevens as the Go code has them (filter.go).
#define SLOT_STEP $0x9e3779b97f4a7c15
#define SEVENS $0x070e1c3870e1c387

// CHUNK ORs into AX (low word) and BX (high word) the presence bit of chunk
// i of reg, whose seven bits start at bit 7*i: shifted right by 7*i-4 and
// masked with 0x7f0, the chunk is its offset into presencePairs (SI), 16
// bytes a pair. Chunk 0 is shifted left by 4 instead.
#define CHUNK(reg, shift) \
	MOVQ reg, R10 \
	SHRQ $shift, R10 \
	ANDL $0x7f0, R10 \
	ORQ  0(SI)(R10*1), AX \
	ORQ  8(SI)(R10*1), BX

#define CHUNK0(reg) \
	MOVQ reg, R10 \
	SHLQ $4, R10 \
	ANDL $0x7f0, R10 \
	ORQ  0(SI)(R10*1), AX \
	ORQ  8(SI)(R10*1), BX

// MIX is mix (hash.go) of x, with t to work in.
#define MIX(x, t) \
	MOVQ  x, t \
	SHRQ  $30, t \
	XORQ  t, x \
	MOVQ  $0xbf58476d1ce4e5b9, t \
	IMULQ t, x \
	MOVQ  x, t \
	SHRQ  $27, t \
	XORQ  t, x \
	MOVQ  $0x94d049bb133111eb, t \
	IMULQ t, x \
	MOVQ  x, t \
	SHRQ  $31, t \
	XORQ  t, x

// func presenceContains(presence *[2]uint64, state uint64, k int) bool
//
// The block's presence bits are loaded first, so that a cache miss is
// under way while the set is drawn. The first k chunks, up to eighteen,
// are drawn straight through, from the last down to chunk 0 of each word:
// a compare on k, the same for every key of a filter, picks where to
// enter. A key whose chunks took a counter twice goes on down the stream
// one chunk at a time (rest); a larger k, or a processor without POPCNT,
// draws every chunk that way (long).
TEXT ·presenceContains(SB), NOSPLIT, $0-25
	MOVQ presence+0(FP), DI
	MOVQ state+8(FP), CX
	MOVQ k+16(FP), R12
	MOVQ 0(DI), R8
	MOVQ 8(DI), R9
	LEAQ ·presencePairs(SB), SI
	MOVQ SEVENS, R10
	XORQ R10, CX
	XORL AX, AX
	XORL BX, BX
	CMPB ·hasPOPCNT(SB), $0
	JEQ  long
	CMPQ R12, $9
	JLE  firstword
	CMPQ R12, $18
	JG   long

	// Ten to eighteen: chunks 0 to k-10 of the second word, then all nine
	// of the first. The sub-filters of a chain with k above nine tighten
	// from ten up, so the compares start there.
	MOVQ state+8(FP), DX
	MOVQ SLOT_STEP, R10
	ADDQ R10, DX
	MIX(DX, R10)
	MOVQ SEVENS, R10
	XORQ R10, DX
	MOVQ R12, R13
	SUBQ $9, R13
	CMPQ R13, $1
	JEQ  second1
	CMPQ R13, $2
	JEQ  second2
	CMPQ R13, $3
	JEQ  second3
	CMPQ R13, $4
	JEQ  second4
	CMPQ R13, $5
	JEQ  second5
	CMPQ R13, $6
	JEQ  second6
	CMPQ R13, $7
	JEQ  second7
	CMPQ R13, $8
	JEQ  second8
	JMP  second9

second9:
	CHUNK(DX, 52)
second8:
	CHUNK(DX, 45)
second7:
	CHUNK(DX, 38)
second6:
	CHUNK(DX, 31)
second5:
	CHUNK(DX, 24)
second4:
	CHUNK(DX, 17)
second3:
	CHUNK(DX, 10)
second2:
	CHUNK(DX, 3)
second1:
	CHUNK0(DX)
	JMP  first9

firstword:
	CMPQ R12, $7
	JEQ  first7
	CMPQ R12, $9
	JEQ  first9
	CMPQ R12, $8
	JEQ  first8
	CMPQ R12, $6
	JEQ  first6
	CMPQ R12, $5
	JEQ  first5
	CMPQ R12, $4
	JEQ  first4
	CMPQ R12, $3
	JEQ  first3
	CMPQ R12, $2
	JEQ  first2
	JMP  first1

first9:
	CHUNK(CX, 52)
first8:
	CHUNK(CX, 45)
first7:
	CHUNK(CX, 38)
first6:
	CHUNK(CX, 31)
first5:
	CHUNK(CX, 24)
first4:
	CHUNK(CX, 17)
first3:
	CHUNK(CX, 10)
first2:
	CHUNK(CX, 3)
first1:
	CHUNK0(CX)

	// Chunks that took a counter twice set fewer than k bits.
	POPCNTQ AX, R10
	POPCNTQ BX, R11
	ADDQ    R11, R10
	CMPQ    R10, R12
	JNE     rest

test:
	NOTQ  R8
	NOTQ  R9
	ANDQ  R8, AX
	ANDQ  R9, BX
	ORQ   BX, AX
	SETEQ ret+24(FP)
	RET

long:
	// Every chunk one at a time, from the first word's chunk 0.
	XORL R10, R10
	MOVQ state+8(FP), DI
	MOVQ CX, DX
	MOVQ $9, R13
	JMP  restloop

rest:
	// R10 counters taken so far. The stream goes on from the chunk after
	// the k-th: in the first word (state) for k up to nine, else in the
	// second (state plus slotStep), k-9 chunks in.
	MOVQ state+8(FP), DI
	MOVQ R12, R13
	CMPQ R12, $9
	JLE  restshift
	MOVQ SLOT_STEP, R11
	ADDQ R11, DI
	MOVQ DX, CX
	SUBQ $9, R13

restshift:
	// The word, shifted past its R13 chunks used, into DX; R13 becomes the
	// chunks left in it.
	MOVQ CX, DX
	MOVQ R13, CX
	SHLQ $3, CX
	SUBQ R13, CX
	SHRQ CX, DX
	NEGQ R13
	ADDQ $9, R13

restloop:
	CMPQ  R10, R12
	JGE   test
	TESTQ R13, R13
	JNZ   draw
	MOVQ  SLOT_STEP, R11
	ADDQ  R11, DI
	MOVQ  DI, DX
	MIX(DX, R11)
	MOVQ  SEVENS, R11
	XORQ  R11, DX
	MOVQ  $9, R13

draw:
	// A counter already taken sets no new bit and counts none. A pair
	// has its one bit in one of its two words, so testing both against
	// the set tells whether the counter is taken.
	DECQ  R13
	MOVQ  DX, R11
	SHLQ  $4, R11
	ANDL  $0x7f0, R11
	MOVQ  0(SI)(R11*1), CX
	MOVQ  8(SI)(R11*1), R11
	SHRQ  $7, DX
	TESTQ CX, AX
	JNZ   restloop
	TESTQ R11, BX
	JNZ   restloop
	ORQ   CX, AX
	ORQ   R11, BX
	INCQ  R10
	JMP   restloop
