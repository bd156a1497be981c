//go:build amd64 && !race

#include "textflag.h"

// presenceContains, countersContains and presenceDraw draw a key's
// counters the same way, and differ only in what they do with each counter
// drawn: presenceContains collects its presence bit and tests the set
// against the block's presence bits at the end; countersContains tests the
// counter itself as it goes; presenceDraw returns the set and marks each
// counter's low bit in the probe's masks. The drawing is written once, in
// the macros below.
//
// Registers, in all three: DI the stream's state (then its later states),
// CX its first word and DX its second, each with SEVENS in; SI
// presencePairs; AX and BX the set drawn so far (its low and high word);
// R12 k; R10, R11 and R13 scratch. presenceContains keeps the block's
// presence words in R8 and R9; countersContains keeps counterPlaces in R8
// and the block's counter words at R9; presenceDraw keeps counterLows in R8
// and the masks at R9.

// slotStep and sevens as the Go code has them (filter.go).
#define SLOT_STEP $0x9e3779b97f4a7c15
#define SEVENS $0x070e1c3870e1c387

// CHUNK ORs into AX (low word) and BX (high word) the presence bit of chunk
// i of reg, whose seven bits start at bit 7*i: shifted right by 7*i-4 and
// masked with 0x7f0, the chunk is its offset into presencePairs (SI), 16
// bytes a pair, left in R10. Chunk 0 is shifted left by 4 instead.
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

// COUNTER tests the counter whose offset into counterPlaces (R8) is in
// idx: the pair there is the byte offset of its word in the block (R9),
// loaded into off, and the mask of its nibble, loaded over idx. A zero
// counter answers false at once.
#define COUNTER(idx, off) \
	MOVQ  0(R8)(idx*1), off \
	MOVQ  8(R8)(idx*1), idx \
	TESTQ idx, 0(R9)(off*1) \
	JZ    zero

// MASK marks in the masks (R9) the low bit of the counter whose offset
// into counterLows (R8) is in idx: the pair there is the byte offset of its
// word, loaded into off, and the low bit of its nibble, loaded over idx. A
// counter drawn twice is marked twice, to the same effect.
#define MASK(idx, off) \
	MOVQ 0(R8)(idx*1), off \
	MOVQ 8(R8)(idx*1), idx \
	ORQ  idx, 0(R9)(off*1)

#define MASK_CHUNK(reg, shift) \
	CHUNK(reg, shift) \
	MASK(R10, R11)

#define MASK_CHUNK0(reg) \
	CHUNK0(reg) \
	MASK(R10, R11)

#define COUNTER_CHUNK(reg, shift) \
	CHUNK(reg, shift) \
	COUNTER(R10, R11)

#define COUNTER_CHUNK0(reg) \
	CHUNK0(reg) \
	COUNTER(R10, R11)

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

// DRAW takes the stream's state in DI and CX and k in R12, and draws the
// first k chunks, up to eighteen, straight through with ch (and ch0 for
// chunk 0 of a word), from the last down to chunk 0 of each word: a
// compare on k, the same for every key of a filter, picks where to enter.
// Then one POPCNT tells whether the chunks took a counter twice; if not,
// it goes on to test, else to rest. A larger k, or a processor without
// POPCNT, goes to long. For ten to eighteen it draws chunks 0 to k-10 of
// the second word (the mix of state plus slotStep), then all nine of the
// first; the sub-filters of a chain with k above nine tighten from ten
// up, so the compares start there.
#define DRAW(ch, ch0) \
	LEAQ ·presencePairs(SB), SI \
	MOVQ SEVENS, R10 \
	XORQ R10, CX \
	XORL AX, AX \
	XORL BX, BX \
	CMPB ·hasPOPCNT(SB), $0 \
	JEQ  long \
	CMPQ R12, $9 \
	JLE  firstword \
	CMPQ R12, $18 \
	JG   long \
	MOVQ DI, DX \
	MOVQ SLOT_STEP, R10 \
	ADDQ R10, DX \
	MIX(DX, R10) \
	MOVQ SEVENS, R10 \
	XORQ R10, DX \
	MOVQ R12, R13 \
	SUBQ $9, R13 \
	CMPQ R13, $1 \
	JEQ  second1 \
	CMPQ R13, $2 \
	JEQ  second2 \
	CMPQ R13, $3 \
	JEQ  second3 \
	CMPQ R13, $4 \
	JEQ  second4 \
	CMPQ R13, $5 \
	JEQ  second5 \
	CMPQ R13, $6 \
	JEQ  second6 \
	CMPQ R13, $7 \
	JEQ  second7 \
	CMPQ R13, $8 \
	JEQ  second8 \
	JMP  second9 \
second9: \
	ch(DX, 52) \
second8: \
	ch(DX, 45) \
second7: \
	ch(DX, 38) \
second6: \
	ch(DX, 31) \
second5: \
	ch(DX, 24) \
second4: \
	ch(DX, 17) \
second3: \
	ch(DX, 10) \
second2: \
	ch(DX, 3) \
second1: \
	ch0(DX) \
	JMP  first9 \
firstword: \
	CMPQ R12, $7 \
	JEQ  first7 \
	CMPQ R12, $9 \
	JEQ  first9 \
	CMPQ R12, $8 \
	JEQ  first8 \
	CMPQ R12, $6 \
	JEQ  first6 \
	CMPQ R12, $5 \
	JEQ  first5 \
	CMPQ R12, $4 \
	JEQ  first4 \
	CMPQ R12, $3 \
	JEQ  first3 \
	CMPQ R12, $2 \
	JEQ  first2 \
	JMP  first1 \
first9: \
	ch(CX, 52) \
first8: \
	ch(CX, 45) \
first7: \
	ch(CX, 38) \
first6: \
	ch(CX, 31) \
first5: \
	ch(CX, 24) \
first4: \
	ch(CX, 17) \
first3: \
	ch(CX, 10) \
first2: \
	ch(CX, 3) \
first1: \
	ch0(CX) \
	POPCNTQ AX, R10 \
	POPCNTQ BX, R11 \
	ADDQ    R11, R10 \
	CMPQ    R10, R12 \
	JNE     rest \
	JMP     test

// REST draws the key's counters one chunk at a time, each new one handed
// to each (with its offset into the tables in R11), until k are drawn;
// then it goes to test. It enters at long, with nothing drawn, from the
// first word's chunk 0; or at rest, with R10 counters drawn from the first
// k chunks, going on from the chunk after the k-th: in the first word
// (state) for k up to nine, else in the second (state plus slotStep), k-9
// chunks in, the word shifted past the chunks used into DX and R13 the
// chunks left in it. A counter already taken sets no new bit and counts
// none: a pair has its one bit in one of its two words, so testing both
// against the set tells whether it is taken.
#define REST(each) \
long: \
	XORL R10, R10 \
	MOVQ CX, DX \
	MOVQ $9, R13 \
	JMP  restloop \
rest: \
	MOVQ R12, R13 \
	CMPQ R12, $9 \
	JLE  restshift \
	MOVQ SLOT_STEP, R11 \
	ADDQ R11, DI \
	MOVQ DX, CX \
	SUBQ $9, R13 \
restshift: \
	MOVQ CX, DX \
	MOVQ R13, CX \
	SHLQ $3, CX \
	SUBQ R13, CX \
	SHRQ CX, DX \
	NEGQ R13 \
	ADDQ $9, R13 \
restloop: \
	CMPQ  R10, R12 \
	JGE   test \
	TESTQ R13, R13 \
	JNZ   draw \
	MOVQ  SLOT_STEP, R11 \
	ADDQ  R11, DI \
	MOVQ  DI, DX \
	MIX(DX, R11) \
	MOVQ  SEVENS, R11 \
	XORQ  R11, DX \
	MOVQ  $9, R13 \
draw: \
	DECQ  R13 \
	MOVQ  DX, R11 \
	SHLQ  $4, R11 \
	ANDL  $0x7f0, R11 \
	SHRQ  $7, DX \
	MOVQ  0(SI)(R11*1), CX \
	TESTQ CX, AX \
	JNZ   restloop \
	TESTQ 8(SI)(R11*1), BX \
	JNZ   restloop \
	ORQ   CX, AX \
	ORQ   8(SI)(R11*1), BX \
	INCQ  R10 \
	each \
	JMP   restloop

#define NOTHING

#define COUNTER_REST COUNTER(R11, CX)

#define MASK_REST MASK(R11, CX)

// func presenceContains(presence *[2]uint64, state uint64, k int) bool
//
// The block's presence bits are loaded first, so that a cache miss is
// under way while the set is drawn.
TEXT ·presenceContains(SB), NOSPLIT, $0-25
	MOVQ presence+0(FP), R11
	MOVQ state+8(FP), DI
	MOVQ k+16(FP), R12
	MOVQ 0(R11), R8
	MOVQ 8(R11), R9
	MOVQ DI, CX
	DRAW(CHUNK, CHUNK0)

test:
	NOTQ  R8
	NOTQ  R9
	ANDQ  R8, AX
	ANDQ  R9, BX
	ORQ   BX, AX
	SETEQ ret+24(FP)
	RET

	REST(NOTHING)

// func countersContains(words *[wordsPerBlock]uint64, state uint64, k int) bool
//
// Each counter is tested as it is drawn, and the first zero one answers.
TEXT ·countersContains(SB), NOSPLIT, $0-25
	MOVQ words+0(FP), R9
	MOVQ state+8(FP), DI
	MOVQ DI, CX
	MOVQ k+16(FP), R12
	LEAQ ·counterPlaces(SB), R8
	DRAW(COUNTER_CHUNK, COUNTER_CHUNK0)

test:
	MOVB $1, ret+24(FP)
	RET

zero:
	MOVB $0, ret+24(FP)
	RET

	REST(COUNTER_REST)

// func presenceDraw(state uint64, k int, masks *[wordsPerBlock]uint64) (lo, hi uint64)
//
// The masks are cleared first, then each counter drawn marks its own.
TEXT ·presenceDraw(SB), NOSPLIT, $0-40
	MOVQ state+0(FP), DI
	MOVQ DI, CX
	MOVQ k+8(FP), R12
	MOVQ masks+16(FP), R9
	LEAQ ·counterLows(SB), R8
	PXOR X0, X0
	MOVOU X0, 0(R9)
	MOVOU X0, 16(R9)
	MOVOU X0, 32(R9)
	MOVOU X0, 48(R9)
	DRAW(MASK_CHUNK, MASK_CHUNK0)

test:
	MOVQ AX, lo+24(FP)
	MOVQ BX, hi+32(FP)
	RET

	REST(MASK_REST)
