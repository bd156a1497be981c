package engine

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/scaling"
)

// The portable export: the whole filter as a stream without page padding,
// for Import and ReadExport. Never change these constants; a new layout is a
// new ExportVersion.
//
//	0          8        12       16       24       32       40       48       56       64       68
//	+----------+--------+--------+--------+--------+--------+--------+--------+--------+--------+
//	| TBEXPORT | version| flags  | seed   | capa-  | error  | tight- | growth | mem    | subs   |
//	|          | u32    | u32    | u64    | city   | rate   | ening  | f64    | seq    | u32    |
//	+----------+--------+--------+--------+--------+--------+--------+--------+--------+--------+
//	then per sub-filter, oldest first, 64 bytes:
//	| level u32 | k u32 | first id | capacity | blocks | count | max id | non-zero | flags u64 |
//	(flags as in the directory: bit 0 for a flat geometry)
//	then per sub-filter, its counters (blocks*64 bytes, Redis u4 order)
//	then crc32c u32 of every byte before it
const (
	ExportMagic   = "TBEXPORT"
	ExportVersion = 2
	exportHeader  = 68
	exportSub     = 64
)

// The frozen export: a read-only 1-bit Bloom filter, a quarter of the
// counters' size, for ReadFrozen. Compact enough for a cookie.
//
//	0      2        3        11       12
//	+------+--------+--------+--------+------------------------------------+
//	| "TF" | version| seed   | subs   | per sub-filter: level u8, k u8,    |
//	|      | u8     | u64    | u8     | blocks uvarint (k's top bit: flat) |
//	+------+--------+--------+--------+------------------------------------+
//	then per sub-filter its bits (blocks*16 bytes: bit i set when counter i
//	is non-zero, byte i/8, most significant bit first), then crc32c u32.
const (
	FrozenMagic   = "TF"
	FrozenVersion = 2
	frozenFlat    = 0x80 // in the k byte
)

// Export writes the filter as a portable stream: parameters, directory,
// tallies and counters, without page padding, with a checksum. Import makes
// a file of it; ReadExport loads it in memory. Opened read-only, the filter
// is first copied as Snapshot copies it. In the writing process it holds the
// filter's lock while it writes, so changes wait for w: give it a file or a
// buffer, or export a Snapshot where w is slow (a network).
func (f *Filter) Export(w io.Writer) error {
	if f.readOnly {
		snap, err := f.Snapshot()
		if err != nil {
			return err
		}
		return snap.Export(w)
	}
	return f.exporting(w, func(subs []*scaling.SubFilter, out *checksummed) {
		info := make([]SubFilterStats, len(subs))
		for i, sub := range subs {
			info[i] = subFilterStats(f.config.params(), sub)
		}
		writeExport(out, f.config, f.journal.MemSeq(), info, func(i int) error {
			out.Write(spaceOf(subs[i]).counters)
			return nil
		})
	})
}

// exportChunk is the most counter bytes WriteExport asks read for at once.
const exportChunk = 8 << 20

// WriteExport writes the export stream of a filter kept elsewhere, given in
// parts: its parameters, the sequence of its last change, its sub-filters
// oldest first (level, first id, capacity, geometry and tallies; the rest
// is ignored) and their counters, which read copies into dst from byte
// offset of sub-filter i, at most 8 MiB at a time, in order. Import reads
// the stream, so a filter kept elsewhere (a Redis copy) becomes a file
// without ever being in memory whole. Import checks what it reads; an
// error from read ends the stream short, and is returned. Sub-filters of a
// geometry Import would refuse, a nil w or a nil read get ErrInvalidInput
// before anything is written.
func WriteExport(w io.Writer, cfg Config, memSeq uint64, subs []SubFilterStats, read func(i int, offset uint64, dst []byte) error) error {
	if read == nil {
		return fmt.Errorf("%w: a nil read function", ErrInvalidInput)
	}
	out := newChecksummed(w)
	if out.err != nil {
		return out.err // before read is asked for anything
	}
	largest := uint64(0)
	for i, sub := range subs {
		// A geometry Import would refuse is refused here, before read is
		// asked for counters that could be exabytes long.
		if err := sub.geometry().Validate(); err != nil {
			return fmt.Errorf("%w: sub-filter %d: %v", ErrInvalidInput, i, err)
		}
		largest = max(largest, sub.geometry().Bytes())
	}
	buf := make([]byte, min(largest, exportChunk))
	err := writeExport(out, cfg, memSeq, subs, func(i int) error {
		size := subs[i].geometry().Bytes()
		for offset := uint64(0); offset < size; {
			chunk := buf[:min(uint64(len(buf)), size-offset)]
			if err := read(i, offset, chunk); err != nil {
				return err
			}
			out.Write(chunk)
			offset += uint64(len(chunk))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return out.finish()
}

// writeExport writes the export stream of a filter given in parts, each
// sub-filter's counters by writeCounters, and returns the first error it
// returns.
func writeExport(out *checksummed, cfg Config, memSeq uint64, subs []SubFilterStats, writeCounters func(i int) error) error {
	le := binary.LittleEndian
	b := make([]byte, exportHeader, exportHeader+exportSub*len(subs))
	copy(b, ExportMagic)
	le.PutUint32(b[8:], ExportVersion)
	le.PutUint32(b[12:], cfg.flags())
	for i, v := range []uint64{cfg.Seed, cfg.Capacity, math.Float64bits(cfg.ErrorRate),
		math.Float64bits(cfg.Tightening), math.Float64bits(cfg.Growth), memSeq} {
		le.PutUint64(b[16+8*i:], v)
	}
	le.PutUint32(b[64:], uint32(len(subs)))
	for _, sub := range subs {
		b = le.AppendUint32(b, uint32(sub.Level))
		b = le.AppendUint32(b, uint32(sub.K))
		for _, v := range []uint64{sub.FirstID, sub.Capacity, sub.Blocks, sub.Count, sub.MaxID, sub.NonZero, geometryFlags(sub.geometry())} {
			b = le.AppendUint64(b, v)
		}
	}
	out.Write(b)
	for i := range subs {
		if err := writeCounters(i); err != nil {
			return err
		}
	}
	return nil
}

// exporting runs write over the sub-filters with the lock held, through a
// checksummed writer, and finishes the stream.
func (f *Filter) exporting(w io.Writer, write func([]*scaling.SubFilter, *checksummed)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return ErrClosed
	}
	out := newChecksummed(w)
	write(f.chain.SubFilters(), out)
	return out.finish()
}

// ExportFrozen writes the filter as a frozen, read-only 1-bit Bloom filter
// that ReadFrozen loads. It answers Contains as the filter does now, cannot
// change, and takes a quarter of the counters' size. Opened read-only, the
// filter is first copied as Snapshot copies it; in the writing process it
// holds the filter's lock while it writes, as Export does.
func (f *Filter) ExportFrozen(w io.Writer) error {
	if f.readOnly {
		snap, err := f.Snapshot()
		if err != nil {
			return err
		}
		out := newChecksummed(w)
		writeFrozen(out, snap.config.Seed, snap.info, func(i int) *counting.Filter { return snap.filters[len(snap.filters)-1-i] })
		return out.finish()
	}
	return f.exporting(w, func(subs []*scaling.SubFilter, out *checksummed) {
		info := make([]SubFilterStats, len(subs))
		for i, sub := range subs {
			info[i] = SubFilterStats{Level: sub.Level, K: sub.Geometry.K, Blocks: sub.Geometry.Blocks, Flat: sub.Geometry.Flat}
		}
		writeFrozen(out, f.config.Seed, info, func(i int) *counting.Filter { return subs[i].Filter() })
	})
}

// writeFrozen writes the frozen form of the sub-filters subs describes,
// oldest first; filter(i) is sub-filter i's counting filter.
func writeFrozen(out *checksummed, seed uint64, subs []SubFilterStats, filter func(i int) *counting.Filter) {
	b := append([]byte(FrozenMagic), FrozenVersion)
	b = binary.LittleEndian.AppendUint64(b, seed)
	b = append(b, byte(len(subs)))
	for _, sub := range subs {
		k := byte(sub.K)
		if sub.Flat {
			k |= frozenFlat
		}
		b = append(b, byte(sub.Level), k)
		b = binary.AppendUvarint(b, sub.Blocks)
	}
	out.Write(b)
	for i, sub := range subs {
		bits := make([]byte, counting.FrozenBytes(sub.geometry()))
		filter(i).Freeze(bits)
		out.Write(bits)
	}
}

// checksummed writes through a CRC-32C and keeps the first error.
type checksummed struct {
	w   *bufio.Writer
	crc hash.Hash32
	err error
}

// newChecksummed writes to w; a nil w fails the writes with
// ErrInvalidInput.
func newChecksummed(w io.Writer) *checksummed {
	c := &checksummed{w: bufio.NewWriter(w), crc: crc32.New(castagnoli)}
	if w == nil {
		c.err = fmt.Errorf("%w: a nil writer", ErrInvalidInput)
	}
	return c
}

func (c *checksummed) Write(b []byte) {
	if c.err == nil {
		c.crc.Write(b)
		_, c.err = c.w.Write(b)
	}
}

func (c *checksummed) finish() error {
	if c.err == nil {
		_, c.err = c.w.Write(binary.LittleEndian.AppendUint32(nil, c.crc.Sum32()))
	}
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.err
}

// exported is a decoded export header.
type exported struct {
	config Config
	memSeq uint64
	subs   []exportedSub
}

type exportedSub struct {
	scaling.Entry
	count, maxID, nonZero uint64
}

// verifying reads through a CRC-32C, so the trailer can be checked.
type verifying struct {
	r   io.Reader
	crc hash.Hash32
}

// newVerifying reads r, which may be a WholeStream; a nil r is refused.
func newVerifying(r io.Reader) (*verifying, error) {
	if whole, ok := r.(wholeStream); r == nil || ok && whole.Reader == nil {
		return nil, fmt.Errorf("%w: a nil reader", ErrInvalidInput)
	}
	return &verifying{r: r, crc: crc32.New(castagnoli)}, nil
}

func (v *verifying) Read(b []byte) (int, error) {
	n, err := v.r.Read(b)
	v.crc.Write(b[:n])
	return n, err
}

// ReadByte reads one byte, unbuffered, so the stream is read no further than
// the checksum covers.
func (v *verifying) ReadByte() (byte, error) {
	var b [1]byte
	_, err := io.ReadFull(v, b[:])
	return b[0], err
}

// check reads the trailer, which must match everything read before it,
// and, from a WholeStream, that nothing follows it.
func (v *verifying) check(what string) error {
	sum := v.crc.Sum32()
	var trailer [4]byte
	if _, err := io.ReadFull(v.r, trailer[:]); err != nil {
		return fmt.Errorf("%w: %s: truncated: %v", ErrCorrupt, what, err)
	}
	if binary.LittleEndian.Uint32(trailer[:]) != sum {
		return fmt.Errorf("%w: %s: checksum mismatch", ErrCorrupt, what)
	}
	whole, ok := v.r.(wholeStream)
	if !ok {
		return nil
	}
	// Counted, a tail says what it is (as long as the export: two joined),
	// up to a bound, so that a stream without end still ends here.
	switch n, err := io.CopyN(io.Discard, whole.Reader, wholeTailCounted+1); {
	case err != nil && err != io.EOF:
		return fmt.Errorf("%w: %s: what follows its checksum: %v", ErrCorrupt, what, err)
	case n == 1:
		return fmt.Errorf("%w: %s: 1 more byte after its checksum: a byte appended", ErrCorrupt, what)
	case n > wholeTailCounted:
		return fmt.Errorf("%w: %s: more than %d MiB after its checksum: two exports joined, or bytes appended", ErrCorrupt, what, wholeTailCounted>>20)
	case n > 1:
		return fmt.Errorf("%w: %s: %d more bytes after its checksum: two exports joined, or bytes appended", ErrCorrupt, what, n)
	}
	return nil
}

// wholeTailCounted is how far past an export's checksum a WholeStream is
// read, to count what follows.
const wholeTailCounted = 64 << 20

// WholeStream marks r, given to Import, ImportAs, ReadExport or
// ReadFrozen, as holding one export and nothing after it: they then read r
// to its end and fail with ErrCorrupt if anything follows the export's
// checksum (two exports joined, or bytes appended), as for a damaged
// export, so that Import leaves no file at its path, not even for a moment.
// They read at most 64 MiB past the checksum, to count what follows, so a
// stream without end fails too. Without the mark they read r no further
// than the checksum and leave the rest to the caller. Give them what
// WholeStream returns as it is: wrapped in another reader, the mark is not
// seen.
func WholeStream(r io.Reader) io.Reader { return wholeStream{r} }

type wholeStream struct{ io.Reader }

func readExportHeader(v *verifying) (exported, error) {
	b := make([]byte, exportHeader)
	if _, err := io.ReadFull(v, b); err != nil {
		return exported{}, fmt.Errorf("%w: export: truncated header: %v", ErrCorrupt, err)
	}
	if string(b[:8]) != ExportMagic {
		return exported{}, fmt.Errorf("%w: not a tallybloom export", ErrNotFilter)
	}
	le := binary.LittleEndian
	if version := le.Uint32(b[8:]); version != ExportVersion {
		return exported{}, fmt.Errorf("%w: export version %d, this tallybloom reads %d", ErrVersion, version, ExportVersion)
	}
	flags := le.Uint32(b[12:])
	e := exported{
		config: Config{
			Seed:         le.Uint64(b[16:]),
			Capacity:     le.Uint64(b[24:]),
			ErrorRate:    math.Float64frombits(le.Uint64(b[32:])),
			Tightening:   math.Float64frombits(le.Uint64(b[40:])),
			Growth:       math.Float64frombits(le.Uint64(b[48:])),
			Fixed:        flags&flagFixed != 0,
			CountersOnly: flags&flagCountersOnly != 0,
		},
		memSeq: le.Uint64(b[56:]),
	}
	n := le.Uint32(b[64:])
	if flags&^knownFlags != 0 || n == 0 || n > scaling.MaxSubFilters || e.config.params().Validate() != nil {
		return exported{}, fmt.Errorf("%w: export: bad parameters", ErrCorrupt)
	}
	b = make([]byte, exportSub*int(n))
	if _, err := io.ReadFull(v, b); err != nil {
		return exported{}, fmt.Errorf("%w: export: truncated directory: %v", ErrCorrupt, err)
	}
	for i := range int(n) {
		s := b[i*exportSub:]
		sub := exportedSub{
			Entry: scaling.Entry{
				Level:    int(le.Uint32(s[0:])),
				Geometry: counting.Geometry{K: int(le.Uint32(s[4:])), Blocks: le.Uint64(s[24:]), Flat: le.Uint64(s[56:])&entryFlat != 0},
				FirstID:  le.Uint64(s[8:]),
				Capacity: le.Uint64(s[16:]),
			},
			count: le.Uint64(s[32:]), maxID: le.Uint64(s[40:]), nonZero: le.Uint64(s[48:]),
		}
		if err := subShapeError(sub.Level, sub.Geometry); err != nil {
			return exported{}, fmt.Errorf("%w: export: sub-filter %d: %v", ErrCorrupt, i, err)
		}
		if le.Uint64(s[56:])&^entryFlat != 0 {
			return exported{}, fmt.Errorf("%w: export: sub-filter %d: unknown flags", ErrCorrupt, i)
		}
		e.subs = append(e.subs, sub)
	}
	return e, nil
}

// subShapeError says what is wrong with a sub-filter's level and geometry as
// a stream gives them, if anything.
func subShapeError(level int, g counting.Geometry) error {
	if level >= scaling.MaxSubFilters {
		return fmt.Errorf("level %d, past the %d a chain holds", level, scaling.MaxSubFilters)
	}
	return g.Validate()
}

// readRegion reads size bytes, growing its buffer only as data arrives, so a
// stream that claims more than it holds cannot make it allocate the claim.
func readRegion(r io.Reader, size uint64) ([]byte, error) {
	buf := make([]byte, 0, min(size, 1<<20))
	for uint64(len(buf)) < size {
		chunk := min(size-uint64(len(buf)), 1<<20)
		start := len(buf)
		buf = append(buf, make([]byte, chunk)...)
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return nil, fmt.Errorf("%w: export: truncated counters: %v", ErrCorrupt, err)
		}
	}
	return buf, nil
}

// copyToFile copies size bytes of r into the file at offset, a chunk at a
// time.
func copyToFile(f *Filter, r io.Reader, offset, size uint64) error {
	chunk := make([]byte, min(size, 1<<20))
	for done := uint64(0); done < size; {
		n := min(size-done, uint64(len(chunk)))
		if _, err := io.ReadFull(r, chunk[:n]); err != nil {
			return fmt.Errorf("%w: export: truncated counters: %v", ErrCorrupt, err)
		}
		if err := f.file.WriteAt(chunk[:n], int64(offset+done)); err != nil {
			return err
		}
		done += n
	}
	return nil
}

// Snapshot is a filter in memory: loaded from an export, copied from an
// open filter, or put together from parts kept elsewhere (NewSnapshot). It
// is read-only, with no file behind it, and safe for concurrent use.
type Snapshot struct {
	config   Config
	memSeq   uint64
	hasher   counting.Hasher
	info     []SubFilterStats   // oldest first
	counters [][]byte           // oldest first
	filters  []*counting.Filter // newest first, over counters
}

// NewSnapshot puts a filter together from its parts: parameters, the
// sequence of its last change, its sub-filters oldest first (level, first
// id, capacity, geometry and tallies; the rest is ignored) and their
// counters. Parts from an untrusted source are checked: a mismatch is
// ErrCorrupt.
func NewSnapshot(cfg Config, memSeq uint64, subs []SubFilterStats, counters [][]byte) (*Snapshot, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if len(subs) == 0 || len(subs) > scaling.MaxSubFilters || len(subs) != len(counters) {
		return nil, fmt.Errorf("%w: %d sub-filters with %d counter regions", ErrCorrupt, len(subs), len(counters))
	}
	s := &Snapshot{config: cfg, memSeq: memSeq, hasher: counting.NewHasher(cfg.Seed), counters: counters}
	params := cfg.params()
	for i, sub := range subs {
		if i > 0 && sub.FirstID <= subs[i-1].FirstID || sub.Level < 0 || sub.Level >= scaling.MaxSubFilters {
			return nil, fmt.Errorf("%w: sub-filter %d: level %d, first id %d", ErrCorrupt, i, sub.Level, sub.FirstID)
		}
		f, err := counting.New(counters[i], nil, sub.geometry(), uint64(sub.Level))
		if err != nil {
			return nil, fmt.Errorf("%w: sub-filter %d: %v", ErrCorrupt, i, err)
		}
		s.filters = append([]*counting.Filter{f}, s.filters...)
		sub.ErrorRate = params.LevelErrorRate(sub.Level)
		sub.Bytes = sub.geometry().Bytes()
		sub.Overfilled = sub.Count > sub.Capacity
		sub.EstimatedKeys = sub.geometry().EstimatedKeys(sub.NonZero)
		s.info = append(s.info, sub)
	}
	return s, nil
}

// Snapshot copies the filter into memory, consistent at one sequence. The
// writer holds the filter's lock while it copies the counters. A filter
// opened read-only cannot stop its writer, another process: it copies while
// no change is in flight and keeps the copy if none committed meanwhile,
// else tries again after a pause, pausing longer each time, for about 1.3
// seconds; then it returns ErrBusy.
func (f *Filter) Snapshot() (*Snapshot, error) {
	if f.readOnly {
		return f.quietSnapshot()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, ErrClosed
	}
	info, counters := f.copyLocked()
	return NewSnapshot(f.config, f.journal.MemSeq(), info, counters)
}

// pieceBytes is the most CopyCounters copies under one hold of the lock: a
// change waits at most for a piece, a fraction of a millisecond.
const pieceBytes = 1 << 20

// CopyCounters copies the counters of the sub-filter at level, from byte
// offset, into dst, a piece of at most 1 MiB at a time between two changes.
// Each piece holds only committed changes, and a block of counters is never
// copied half changed, but pieces may hold different sequences: a copy kept
// right by replaying what OnCommit reports after the Stats it started from.
// A copy that must be exact at one sequence is Snapshot, which holds the
// filter's lock for all of it.
//
// offset and len(dst) are whole blocks (multiples of 64 bytes). It returns
// ErrInvalidInput for other ranges and for bytes past the sub-filter's end,
// ErrNoSubFilter if the chain holds no sub-filter at level (it was
// retired), and ErrReadOnly on a filter opened read-only, which cannot stop
// its writer. A level a retirement freed goes to the next sub-filter opened,
// with the same shape: pieces copied after that are the new sub-filter's,
// and a replay of the retirement and the opening puts them right.
func (f *Filter) CopyCounters(level int, offset uint64, dst []byte) error {
	if f.readOnly {
		return ErrReadOnly
	}
	if offset%counting.BlockBytes != 0 || len(dst)%counting.BlockBytes != 0 {
		return fmt.Errorf("%w: %d bytes at %d are not whole blocks of %d", ErrInvalidInput, len(dst), offset, counting.BlockBytes)
	}
	for len(dst) > 0 {
		n := min(len(dst), pieceBytes)
		if err := f.copyPiece(level, offset, dst[:n]); err != nil {
			return err
		}
		dst, offset = dst[n:], offset+uint64(n)
	}
	return nil
}

// copyPiece is one piece of CopyCounters, under the lock.
func (f *Filter) copyPiece(level int, offset uint64, dst []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return ErrClosed
	}
	for _, sub := range f.chain.SubFilters() {
		if sub.Level != level {
			continue
		}
		counters := spaceOf(sub).counters
		if offset > uint64(len(counters)) || uint64(len(dst)) > uint64(len(counters))-offset {
			return fmt.Errorf("%w: %d bytes at %d of sub-filter %d, which has %d", ErrInvalidInput, len(dst), offset, level, len(counters))
		}
		loadCountersInto(dst, counters[offset:])
		return nil
	}
	return fmt.Errorf("%w: %s: level %d", ErrNoSubFilter, f.path, level)
}

// Span is a run of whole 64-byte blocks of a sub-filter's counters.
type Span struct {
	Level  int
	Offset uint64 // bytes from the sub-filter's first counter
	Bytes  uint64
}

// CopySpans copies spans of counters into dst, one after the other, all
// under one hold of the lock between two changes, and returns the Stats of
// that moment: the copy is exact at its MemSeq. It is how a copy kept up to
// date from a record of the blocks changes touched, rather than from their
// bytes, reads those blocks again. The filter changes nothing while it
// copies, so the caller keeps the spans short (a megabyte takes a fraction
// of a millisecond).
//
// A span of a level the chain does not hold is skipped, its room in dst
// left as it was; the Stats's SubFilters say which levels the chain holds,
// and which sub-filter holds each (a level freed by a retirement goes to the
// next sub-filter opened, with a new FirstID). It returns ErrInvalidInput
// for spans that are not whole blocks, that end past their sub-filter, or
// that dst is too short for, and ErrReadOnly on a filter opened read-only.
func (f *Filter) CopySpans(spans []Span, dst []byte) (Stats, error) {
	if f.readOnly {
		return Stats{}, ErrReadOnly
	}
	room := uint64(len(dst)) // what the spans before leave of dst
	for _, s := range spans {
		if s.Offset%counting.BlockBytes != 0 || s.Bytes%counting.BlockBytes != 0 {
			return Stats{}, fmt.Errorf("%w: %d bytes at %d of level %d are not whole blocks of %d", ErrInvalidInput, s.Bytes, s.Offset, s.Level, counting.BlockBytes)
		}
		// Compared with what is left, not summed: a sum of lengths could
		// wrap around and pass.
		if s.Bytes > room {
			return Stats{}, fmt.Errorf("%w: spans of more bytes than the %d of dst", ErrInvalidInput, len(dst))
		}
		room -= s.Bytes
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return Stats{}, ErrClosed
	}
	var held [scaling.MaxSubFilters][]byte // counters by level
	for _, sub := range f.chain.SubFilters() {
		held[sub.Level] = spaceOf(sub).counters
	}
	for _, s := range spans {
		var counters []byte
		if s.Level >= 0 && s.Level < len(held) {
			counters = held[s.Level]
		}
		if counters != nil {
			if s.Offset > uint64(len(counters)) || s.Bytes > uint64(len(counters))-s.Offset {
				return Stats{}, fmt.Errorf("%w: %d bytes at %d of sub-filter %d, which has %d", ErrInvalidInput, s.Bytes, s.Offset, s.Level, len(counters))
			}
			loadCountersInto(dst[:s.Bytes], counters[s.Offset:])
		}
		dst = dst[s.Bytes:]
	}
	return f.collectStats(), nil
}

// quietAttempts and quietPause bound a read-only Snapshot's attempts: the
// pause after attempt i is quietPause<<i, at most 100 ms.
const (
	quietAttempts = 20
	quietPause    = time.Millisecond
)

// quietSnapshot copies a read-only filter between two changes of its
// writer, trying again after a pause when one got in the way. It holds the
// filter's lock for an attempt, not for the pause: a lookup that must follow
// a new directory takes that lock too.
func (f *Filter) quietSnapshot() (*Snapshot, error) {
	if f.closed.Load() {
		return nil, ErrClosed
	}
	first := f.journal.MemSeq()
	for attempt := range f.quietAttempts() {
		if attempt > 0 {
			time.Sleep(min(quietPause<<(attempt-1), 100*time.Millisecond))
		}
		snap, err := f.quietAttempt()
		if snap != nil || err != nil {
			return snap, err
		}
	}
	if f.journal.Sealed() && f.journal.MemSeq() == first {
		// One change, never committed: its writer may have died in it.
		return nil, fmt.Errorf("%w: %s: change %d was in flight during each of %d attempts to copy it; if its writer stopped, open the file for writing once to undo it", ErrBusy, f.path, first+1, f.quietAttempts())
	}
	return nil, fmt.Errorf("%w: %s: its writer changed it during each of %d attempts to copy it; copy it in the writing process, or when it is quieter", ErrBusy, f.path, f.quietAttempts())
}

// quietAttempt reads the sequence, copies the directory live at it, the
// tallies and the counters (a word at a time, with atomic loads, as the
// writer stores them), and keeps the copy if no change was in flight at
// either end and the sequence did not move. It returns no copy and no error
// when a change got in the way.
func (f *Filter) quietAttempt() (*Snapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, ErrClosed
	}
	seq := f.journal.MemSeq()
	if f.journal.Sealed() {
		return nil, nil
	}
	if err := f.followLocked(seq); errors.Is(err, errMovedOn) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	info, counters := f.copyLocked()
	if f.journal.Sealed() || f.journal.MemSeq() != seq {
		return nil, nil
	}
	return NewSnapshot(f.config, seq, info, counters)
}

// quietAttempts is quietAttempts, or fewer where a test asks.
func (f *Filter) quietAttempts() int {
	if f.quietTries > 0 {
		return f.quietTries
	}
	return quietAttempts
}

// copyLocked copies the sub-filters' tallies and counters into memory.
func (f *Filter) copyLocked() ([]SubFilterStats, [][]byte) {
	subs := f.chain.SubFilters()
	info := make([]SubFilterStats, len(subs))
	counters := make([][]byte, len(subs))
	for i, sub := range subs {
		info[i] = subFilterStats(f.config.params(), sub)
		counters[i] = loadCounters(spaceOf(sub).counters)
	}
	return info, counters
}

// loadCounters copies counters a writer may be changing.
func loadCounters(src []byte) []byte {
	dst := make([]byte, len(src))
	loadCountersInto(dst, src)
	return dst
}

// loadCountersInto copies the first len(dst) bytes of src, counters a
// writer may be changing, a word at a time with atomic loads, as the writer
// stores them. src starts at a word and len(dst) is whole words (callers
// copy whole blocks).
func loadCountersInto(dst, src []byte) {
	words := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(src))), len(dst)/8)
	for i := range words {
		binary.LittleEndian.PutUint64(dst[8*i:], atomic.LoadUint64(&words[i]))
	}
}

// ReadExport loads an Export stream in memory. Like Import and ReadFrozen,
// it reads r no further than the export's checksum, so whatever follows in
// r is left for the caller to read, unless r is a WholeStream.
func ReadExport(r io.Reader) (*Snapshot, error) {
	v, err := newVerifying(r)
	if err != nil {
		return nil, err
	}
	e, err := readExportHeader(v)
	if err != nil {
		return nil, err
	}
	info := make([]SubFilterStats, len(e.subs))
	counters, err := readSubFilters(v, "export", len(e.subs), func(i int) (uint64, func([]byte) ([]byte, error)) {
		sub := e.subs[i]
		info[i] = SubFilterStats{Level: sub.Level, FirstID: sub.FirstID, MaxID: sub.maxID, Capacity: sub.Capacity,
			Count: sub.count, NonZero: sub.nonZero, K: sub.Geometry.K, Blocks: sub.Geometry.Blocks, Flat: sub.Geometry.Flat}
		return sub.Geometry.Bytes(), func(counters []byte) ([]byte, error) { return counters, nil }
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(counters) // readSubFilters returns newest first
	return NewSnapshot(e.config, e.memSeq, info, counters)
}

// readSubFilters reads n regions in order, builds a sub-filter of each with
// what shape(i) gives (its size and its constructor), checks the stream's
// trailer, and returns them newest first.
func readSubFilters[F any](v *verifying, what string, n int, shape func(i int) (uint64, func([]byte) (F, error))) ([]F, error) {
	subs := make([]F, n)
	for i := range n {
		size, build := shape(i)
		region, err := readRegion(v, size)
		if err != nil {
			return nil, err
		}
		f, err := build(region)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
		}
		subs[n-1-i] = f
	}
	if err := v.check(what); err != nil {
		return nil, err
	}
	return subs, nil
}

// Export writes the snapshot as Filter.Export would have.
func (s *Snapshot) Export(w io.Writer) error {
	out := newChecksummed(w)
	writeExport(out, s.config, s.memSeq, s.info, func(i int) error {
		out.Write(s.counters[i])
		return nil
	})
	return out.finish()
}

// Contains reports whether key was probably in the filter.
func (s *Snapshot) Contains(key []byte) bool { return s.contains(s.hasher.Key(key)) }

// ContainsString is Contains for a string key.
func (s *Snapshot) ContainsString(key string) bool { return s.contains(s.hasher.String(key)) }

func (s *Snapshot) contains(h counting.Hash) bool { return anyContains(s.filters, h) }

// anyContains reports whether any of subs holds the key.
func anyContains[F interface{ Contains(counting.Hash) bool }](subs []F, h counting.Hash) bool {
	for _, f := range subs {
		if f.Contains(h) {
			return true
		}
	}
	return false
}

// Config is the filter's parameters.
func (s *Snapshot) Config() Config { return s.config }

// MemSeq is the sequence of the filter's last change.
func (s *Snapshot) MemSeq() uint64 { return s.memSeq }

// SubFilters describes the sub-filters, oldest first.
func (s *Snapshot) SubFilters() []SubFilterStats { return s.info }

// Counters are the counter bytes of sub-filter i (as SubFilters orders
// them), in the file's layout. They must not be modified.
func (s *Snapshot) Counters(i int) []byte { return s.counters[i] }

// Frozen is a frozen 1-bit filter loaded by ReadFrozen. It is safe for
// concurrent use.
type Frozen struct {
	hasher counting.Hasher
	subs   []*counting.Frozen // newest first
}

// Contains reports whether key was probably in the filter when it was frozen.
func (z *Frozen) Contains(key []byte) bool { return anyContains(z.subs, z.hasher.Key(key)) }

// ContainsString is Contains for a string key.
func (z *Frozen) ContainsString(key string) bool { return anyContains(z.subs, z.hasher.String(key)) }

// ReadFrozen loads a frozen filter written by ExportFrozen, reading r no
// further than its checksum unless r is a WholeStream.
func ReadFrozen(r io.Reader) (*Frozen, error) {
	v, err := newVerifying(r)
	if err != nil {
		return nil, err
	}
	head := make([]byte, len(FrozenMagic)+1+8+1)
	if _, err := io.ReadFull(v, head); err != nil {
		return nil, fmt.Errorf("%w: frozen filter: truncated: %v", ErrCorrupt, err)
	}
	if string(head[:2]) != FrozenMagic {
		return nil, fmt.Errorf("%w: not a frozen tallybloom filter", ErrNotFilter)
	}
	if head[2] != FrozenVersion {
		return nil, fmt.Errorf("%w: frozen filter version %d, this tallybloom reads %d", ErrVersion, head[2], FrozenVersion)
	}
	z := &Frozen{hasher: counting.NewHasher(binary.LittleEndian.Uint64(head[3:]))}
	n := int(head[11])
	if n == 0 || n > scaling.MaxSubFilters {
		return nil, fmt.Errorf("%w: frozen filter of %d sub-filters", ErrCorrupt, n)
	}
	type shape struct {
		level int
		g     counting.Geometry
	}
	shapes := make([]shape, n)
	for i := range shapes {
		level, err1 := v.ReadByte()
		k, err2 := v.ReadByte()
		blocks, err3 := binary.ReadUvarint(v)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%w: frozen filter: truncated: %v", ErrCorrupt, err)
		}
		shapes[i] = shape{int(level), counting.Geometry{Blocks: blocks, K: int(k &^ frozenFlat), Flat: k&frozenFlat != 0}}
		if err := subShapeError(shapes[i].level, shapes[i].g); err != nil {
			return nil, fmt.Errorf("%w: frozen filter: sub-filter %d: %v", ErrCorrupt, i, err)
		}
	}
	z.subs, err = readSubFilters(v, "frozen filter", n, func(i int) (uint64, func([]byte) (*counting.Frozen, error)) {
		s := shapes[i]
		return counting.FrozenBytes(s.g), func(bits []byte) (*counting.Frozen, error) {
			return counting.NewFrozen(bits, s.g, uint64(s.level))
		}
	})
	if err != nil {
		return nil, err
	}
	return z, nil
}

// Import creates a filter file at path from an Export stream: the same
// parameters, seed, sub-filters, counters and tallies, continuing at the
// exported sequence. It fails with ErrExists if path exists, unless
// Options.Replace lets it replace a filter file, and removes the file it
// made if the stream turns out damaged. The file is built beside path
// under a name of its own (.NAME.creating-…) and takes the name path
// only once whole and flushed, so a process killed while it imports leaves
// nothing at path; the next Create or Import of path removes what it left.
// It reads r no further than the export's checksum: a stream that goes on
// after it is not an error here, unless r is a WholeStream.
func Import(path string, r io.Reader, opts *Options) (*Filter, error) {
	return importFile(path, r, opts, func(*Config) {})
}

// ImportAs is Import into a file that keeps presence bits, or keeps
// counters only if countersOnly (see Config.CountersOnly), whatever the
// exported filter kept: the way to change a filter's layout is to export it
// and import it as the other. A file of format version 2, which keeps
// counters only, gains presence bits this way.
func ImportAs(path string, r io.Reader, countersOnly bool, opts *Options) (*Filter, error) {
	return importFile(path, r, opts, func(c *Config) { c.CountersOnly = countersOnly })
}

// importFile is Import with the exported config passed through layout
// before the file is made.
func importFile(path string, r io.Reader, opts *Options, layout func(*Config)) (*Filter, error) {
	v, err := newVerifying(r)
	if err != nil {
		return nil, err
	}
	e, err := readExportHeader(v)
	if err != nil {
		return nil, err
	}
	if e.memSeq == 0 {
		return nil, fmt.Errorf("%w: export at sequence 0", ErrCorrupt)
	}
	layout(&e.config)
	return createFile(path, e.config, opts, func(f *Filter) error {
		f.journal.Reset(e.memSeq - 1) // the import commits as the exported sequence
		st := store{f}
		subs := make([]*scaling.SubFilter, 0, len(e.subs))
		for _, es := range e.subs {
			// Write the counters as they arrive, then reserve: a stream
			// that claims more than it holds costs only what it holds.
			offset := f.freeOffset(f.regionBytes(es.Geometry))
			if err := copyToFile(f, v, offset, es.Geometry.Bytes()); err != nil {
				return err
			}
			sp, err := f.reserveSpace(es.Level, es.Geometry, offset)
			if err != nil {
				return err
			}
			le := binary.LittleEndian
			le.PutUint64(sp.tallies[0:], es.count)
			le.PutUint64(sp.tallies[8:], es.maxID)
			le.PutUint64(sp.tallies[16:], es.nonZero)
			sub, err := scaling.Attach(es.Entry, sp)
			if err != nil {
				_ = sp.region.Unmap()
				return fmt.Errorf("%w: export: %v", ErrCorrupt, err)
			}
			sub.Filter().RebuildPresence()
			subs = append(subs, sub)
		}
		chain, err := scaling.Restore(f.config.params(), st, subs)
		f.chain = chain
		if err != nil {
			f.chain = nil
			for _, sub := range subs {
				_ = spaceOf(sub).region.Unmap()
			}
			return fmt.Errorf("%w: export: %v", ErrCorrupt, err)
		}
		if err := v.check("export"); err != nil {
			return err
		}
		st.Publish(subs)
		return nil
	})
}
