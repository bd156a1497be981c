package seqno

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync/atomic"
	"unsafe"

	"github.com/tallybloom/tallybloom/internal/release"
)

// The journal's layout. Never change these: they are part of the file format.
// The memory sequence has a cache line of its own; the undo record follows.
//
//	0                8                                                 64
//	+----------------+-------------------------------------------------+
//	| mem seq  u64   | zero                                            |
//	+----------------+-------+--------+---------------------------------+
//	64               72      76       80
//	| undo seq u64   | spans | crc32c | span 0 | span 1 | ... | span 8  |
//	|                | u32   | u32    | 80 B each                       |
//	+----------------+-------+--------+---------------------------------+
//
// A span is:
//
//	0        4        8                16                              80
//	+--------+--------+----------------+-------------------------------+
//	| area   | length | offset u64     | prior bytes [64]              |
//	| u32    | u32    |                | (length used, rest zero)      |
//	+--------+--------+----------------+-------------------------------+
//
// The crc32c covers the undo seq, the span count and the used spans.
const (
	journalMemSeq = 0
	undoOffset    = 64
	undoSeq       = undoOffset + 0
	undoCount     = undoOffset + 8
	undoCRC       = undoOffset + 12
	undoSpans     = undoOffset + 16
	spanArea      = 0
	spanLength    = 4
	spanOffset    = 8
	spanBytes     = 16
	spanSize      = 80
	// MaxSpans is the number of spans one change may save: enough for the
	// eight counter words of a flat sub-filter's change and its tallies.
	MaxSpans = 9
	// MaxSpanBytes is the largest span.
	MaxSpanBytes = 64
	// JournalSize is the size of the journal area.
	JournalSize = undoSpans + MaxSpans*spanSize
)

// Span is the prior content of bytes a change writes: Length bytes at Offset
// of an area the caller names.
type Span struct {
	Area   uint32
	Offset uint64
	Prior  []byte
}

// Journal is the memory sequence and undo record over a caller's region,
// usually a mapped page of the file.
type Journal struct {
	region *[JournalSize]byte
	memSeq *uint64
	undo   *uint64
	spans  int
	// head is scratch room for the checksummed sequence and count; a field,
	// so that checksumming with hash/crc32 does not allocate.
	head [12]byte
}

// NewJournal returns a Journal over region[:JournalSize]; region must be
// 8-byte aligned.
func NewJournal(region []byte) (*Journal, error) {
	region, err := alignedArea(region, JournalSize, "journal")
	if err != nil {
		return nil, err
	}
	return &Journal{
		region: (*[JournalSize]byte)(region),
		memSeq: (*uint64)(unsafe.Pointer(&region[journalMemSeq])),
		undo:   (*uint64)(unsafe.Pointer(&region[undoSeq])),
	}, nil
}

// alignedArea returns region[:size], checking that region holds size bytes
// from an 8-byte aligned start; what names the area in the error.
func alignedArea(region []byte, size int, what string) ([]byte, error) {
	if len(region) < size {
		return nil, fmt.Errorf("%w: %s of %d bytes", ErrCorrupt, what, len(region))
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(region)))%8 != 0 {
		return nil, fmt.Errorf("%w: %s not 8-byte aligned", ErrCorrupt, what)
	}
	return region[:size:size], nil
}

// MemSeq is the sequence of the last committed change.
func (j *Journal) MemSeq() uint64 { return atomic.LoadUint64(j.memSeq) }

// Reset sets the memory sequence to seq and forgets any undo record: for a
// new file, or after a pending record was applied.
func (j *Journal) Reset(seq uint64) {
	release.Store64(j.undo, 0)
	release.Store64(j.memSeq, seq)
}

// Padding is the journal's room that the format keeps zero: the rest of the
// memory sequence's cache line.
func (j *Journal) Padding() []byte { return j.region[journalMemSeq+8 : undoOffset] }

// Sealed reports that a change is in flight: its undo record is sealed and
// it has not committed.
func (j *Journal) Sealed() bool { return atomic.LoadUint64(j.undo) == j.MemSeq()+1 }

// Begin starts the undo record of the next change.
func (j *Journal) Begin() { j.spans = 0 }

// Save records the prior content of a span the change will write. It must
// come before the write, and a change saves at most MaxSpans spans of at most
// MaxSpanBytes each; more is a bug in the caller.
func (j *Journal) Save(area uint32, offset uint64, prior []byte) {
	if uint(j.spans) >= MaxSpans || len(prior) > MaxSpanBytes {
		panic(fmt.Sprintf("seqno: span %d of %d bytes exceeds the undo record", j.spans, len(prior)))
	}
	s := (*[spanSize]byte)(j.region[undoSpans+j.spans*spanSize:])
	binary.LittleEndian.PutUint32(s[spanArea:], area)
	binary.LittleEndian.PutUint32(s[spanLength:], uint32(len(prior)))
	binary.LittleEndian.PutUint64(s[spanOffset:], offset)
	// A block, the span of nearly every change, fills its room word by
	// word, with no call of memmove; only a shorter span has the rest of
	// its room cleared.
	room := (*[MaxSpanBytes]byte)(s[spanBytes:])
	if len(prior) == MaxSpanBytes {
		copyBlock(room, (*[MaxSpanBytes]byte)(prior))
	} else {
		*room = [MaxSpanBytes]byte{}
		copy(room[:], prior)
	}
	j.spans++
}

// copyBlock copies src to dst as eight words, each loaded into a register
// and stored, wherever either lies: an assignment of the arrays compiles
// to a call of memmove.
func copyBlock(dst, src *[MaxSpanBytes]byte) {
	le := binary.LittleEndian
	le.PutUint64(dst[0:], le.Uint64(src[0:]))
	le.PutUint64(dst[8:], le.Uint64(src[8:]))
	le.PutUint64(dst[16:], le.Uint64(src[16:]))
	le.PutUint64(dst[24:], le.Uint64(src[24:]))
	le.PutUint64(dst[32:], le.Uint64(src[32:]))
	le.PutUint64(dst[40:], le.Uint64(src[40:]))
	le.PutUint64(dst[48:], le.Uint64(src[48:]))
	le.PutUint64(dst[56:], le.Uint64(src[56:]))
}

// Seal completes the record; the change may write after Seal returns.
func (j *Journal) Seal() {
	seq := j.MemSeq() + 1
	binary.LittleEndian.PutUint32(j.region[undoCount:], uint32(j.spans))
	binary.LittleEndian.PutUint32(j.region[undoCRC:], j.checksum(seq, j.spans))
	// The sequence goes last: a record naming the next sequence is whole.
	release.Store64(j.undo, seq)
}

// Commit makes the sealed change the last committed one.
func (j *Journal) Commit() { release.Store64(j.memSeq, atomic.LoadUint64(j.undo)) }

// Pending returns the undo record of a change that was sealed but never
// committed, if there is one.
func (j *Journal) Pending() ([]Span, bool, error) {
	seq := atomic.LoadUint64(j.undo)
	if seq != j.MemSeq()+1 {
		return nil, false, nil
	}
	n := binary.LittleEndian.Uint32(j.region[undoCount:])
	if n > MaxSpans {
		return nil, false, fmt.Errorf("%w: undo record of %d spans", ErrCorrupt, n)
	}
	if j.checksum(seq, int(n)) != binary.LittleEndian.Uint32(j.region[undoCRC:]) {
		return nil, false, fmt.Errorf("%w: undo record checksum mismatch", ErrCorrupt)
	}
	spans := make([]Span, n)
	for i := range spans {
		s := j.region[undoSpans+i*spanSize:][:spanSize]
		length := binary.LittleEndian.Uint32(s[spanLength:])
		if length > MaxSpanBytes {
			return nil, false, fmt.Errorf("%w: undo span of %d bytes", ErrCorrupt, length)
		}
		spans[i] = Span{
			Area:   binary.LittleEndian.Uint32(s[spanArea:]),
			Offset: binary.LittleEndian.Uint64(s[spanOffset:]),
			Prior:  append([]byte(nil), s[spanBytes:spanBytes+length]...),
		}
	}
	return spans, true, nil
}

// checksum is the crc32c of the record's sequence and span count,
// little-endian, then its used spans; spans is at most MaxSpans.
//
// It is on the path of every change: 172 bytes for an add. Where the
// processor has CRC32Q, crc1 runs it as one chain, a span of ten CRC32Q
// steps a turn of its loop, with none of hash/crc32's dispatch: 14 to 16 ns
// for an add's record on an AMD EPYC, where three chains side by side,
// joined with tables that carry a state over the bytes after it, took 23
// to 25 (the joining cost more than the chain's wait). On an Intel Xeon,
// three chains joined by carry-less multiplies (PCLMULQDQ) instead halved
// the record's latency (BenchmarkChecksum's latency rows: 22.8 to 12.6
// ns) but cost throughput (7.5 to 9.5 ns), and took about 1% off an add
// whose block comes from memory, within the noise of the pairs that
// measured it (docs/PERFORMANCE.md): the chain's wait mostly overlaps the
// add's other work, so the one chain stays. Elsewhere hash/crc32 computes
// the same checksum.
func (j *Journal) checksum(seq uint64, spans int) uint32 {
	if hasCRC1 {
		return ^crc1(seq, uint32(spans), &j.region[undoSpans])
	}
	binary.LittleEndian.PutUint64(j.head[:], seq)
	binary.LittleEndian.PutUint32(j.head[8:], uint32(spans))
	used := j.region[undoSpans : undoSpans+spans*spanSize]
	return crc32.Update(crc32.Update(0, castagnoli, j.head[:]), castagnoli, used)
}
