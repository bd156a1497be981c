package engine

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/tallybloom/tallybloom/counting"
	"github.com/tallybloom/tallybloom/scaling"
	"github.com/tallybloom/tallybloom/seqno"
)

// The file format. Never change these constants: files on disk and their
// readers depend on them. A change of layout is a new FormatVersion.
//
// The file is a header of three pages followed by the regions of the
// sub-filters, each page-aligned: its counters, then (unless the filter
// keeps counters only) its presence bits.
//
//	page 0  +-------------------------------------------------------------+
//	        | superblock       0..128   immutable, checksummed            |
//	        | state          256..292   seqno.State: dirty, durable seq   |
//	        | dir seq        512..520   newest directory announced        |
//	        | journal       1024..1344  seqno journal: mem seq, undo      |
//	        | tallies       2048..4096  64 x 32 bytes, one per level      |
//	page 1  | directory slot A                                            |
//	page 2  | directory slot B                                            |
//	page 3+ | sub-filter regions, each:                                   |
//	        |   counters       64-byte blocks of 4-bit counters           |
//	        |   presence bits  16 bytes a block (none if counters only)   |
//	        |   zero           to the next page                           |
//	        +-------------------------------------------------------------+
const (
	Magic         = "TLYBLOOM"
	FormatVersion = 3
	// countersOnlyVersion is the oldest version Open reads: its files keep
	// no presence bits and read as Config.CountersOnly.
	countersOnlyVersion = 2
	PageSize            = 4096
	HeaderPages         = 3
	HeaderBytes         = HeaderPages * PageSize

	offSuperblock = 0
	offState      = 256
	offDirSeq     = 512
	offJournal    = 1024
	offTallies    = 2048
	offDirectory  = PageSize // slot i at offDirectory + i*PageSize

	hashXXH64Seeded = 1

	// Superblock flags.
	flagFixed        = 1 << 0
	flagCountersOnly = 1 << 1 // from version 3
	knownFlags       = flagFixed | flagCountersOnly
)

// The superblock, written once at creation:
//
//	0        8        12       16       20       24               32
//	+--------+--------+--------+--------+--------+----------------+
//	| magic  | version| header | hash   | block  | seed u64       |
//	| [8]    | u32    | bytes  | alg    | bytes  |                |
//	+--------+--------+--------+--------+--------+----------------+
//	32               40               48               56               64
//	| capacity u64   | error rate f64 | tightening f64 | growth f64     |
//	+----------------+----------------+----------------+----------------+
//	64       68       72       76                                     128
//	| max    | flags  | crc32c | zero                                 |
//	| subs   | u32    | 0..72  |                                      |
//	+--------+--------+--------+--------------------------------------+
const (
	sbMagic      = 0
	sbVersion    = 8
	sbHeader     = 12
	sbHash       = 16
	sbBlock      = 20
	sbSeed       = 24
	sbCapacity   = 32
	sbErrorRate  = 40
	sbTightening = 48
	sbGrowth     = 56
	sbMaxSubs    = 64
	sbFlags      = 68
	sbCRC        = 72
	sbSize       = 128
)

// A directory slot, one page, rewritten (alternately A and B) by every change
// that opens or retires sub-filters:
//
//	0                8        12       16
//	+----------------+--------+--------+--------------------------------+
//	| generation u64 | count  | crc32c | entries, 48 bytes each         |
//	| (sequence of   | u32    |        |                                |
//	|  its change)   |        |        |                                |
//	+----------------+--------+--------+--------------------------------+
//
// An entry, oldest sub-filter first:
//
//	0        4        8                16               24
//	+--------+--------+----------------+----------------+
//	| level  | k      | first id u64   | capacity u64   |
//	+--------+--------+----------------+----------------+
//	24               32               40               48
//	| blocks u64     | offset u64     | flags u64      |
//	+----------------+----------------+----------------+
//
// Entry flags: bit 0 set for a flat geometry (counting.Geometry.Flat).
//
// The crc32c covers the generation, the count and the used entries. The live
// slot is the valid one with the highest generation not above the memory
// sequence, so a slot written by a change that never committed is ignored;
// a writer's Open clears such a slot before the next change can take the
// sequence it names.
const (
	dirGeneration = 0
	dirCount      = 8
	dirCRC        = 12
	dirEntries    = 16
	entrySize     = 48
	entLevel      = 0
	entK          = 4
	entFirstID    = 8
	entCapacity   = 16
	entBlocks     = 24
	entOffset     = 32
	entFlags      = 40
	entryFlat     = 1 << 0
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeSuperblock(b []byte, c Config) {
	b = b[:sbSize]
	clear(b)
	copy(b[sbMagic:], Magic)
	le := binary.LittleEndian
	le.PutUint32(b[sbVersion:], FormatVersion)
	le.PutUint32(b[sbHeader:], HeaderBytes)
	le.PutUint32(b[sbHash:], hashXXH64Seeded)
	le.PutUint32(b[sbBlock:], counting.BlockBytes)
	le.PutUint64(b[sbSeed:], c.Seed)
	le.PutUint64(b[sbCapacity:], c.Capacity)
	le.PutUint64(b[sbErrorRate:], math.Float64bits(c.ErrorRate))
	le.PutUint64(b[sbTightening:], math.Float64bits(c.Tightening))
	le.PutUint64(b[sbGrowth:], math.Float64bits(c.Growth))
	le.PutUint32(b[sbMaxSubs:], scaling.MaxSubFilters)
	le.PutUint32(b[sbFlags:], c.flags())
	le.PutUint32(b[sbCRC:], crc32.Checksum(b[:sbCRC], castagnoli))
}

// decodeSuperblock checks the magic first, so that a file that is not a
// filter says so, then the version, so that a newer or older file says so, then the
// checksum and every field.
func decodeSuperblock(path string, b []byte) (Config, error) {
	if len(b) < sbSize || string(b[sbMagic:sbMagic+len(Magic)]) != Magic {
		return Config{}, &notFilterError{path: path}
	}
	le := binary.LittleEndian
	version, known := le.Uint32(b[sbVersion:]), uint32(knownFlags)
	switch {
	case version > FormatVersion:
		return Config{}, fmt.Errorf("%w: %s: format version %d is newer than %d; upgrade tallybloom", ErrVersion, path, version, FormatVersion)
	case version == 0:
		return Config{}, corrupt(path, "format version 0")
	case version < countersOnlyVersion:
		return Config{}, fmt.Errorf("%w: %s: format version %d places keys differently from version %d; rebuild the filter from its keys", ErrVersion, path, version, FormatVersion)
	case version == countersOnlyVersion:
		known = flagFixed
	}
	if crc32.Checksum(b[:sbCRC], castagnoli) != le.Uint32(b[sbCRC:]) {
		return Config{}, corrupt(path, "superblock checksum mismatch")
	}
	if le.Uint32(b[sbHeader:]) != HeaderBytes || le.Uint32(b[sbHash:]) != hashXXH64Seeded ||
		le.Uint32(b[sbBlock:]) != counting.BlockBytes || le.Uint32(b[sbMaxSubs:]) != scaling.MaxSubFilters ||
		le.Uint32(b[sbFlags:])&^known != 0 {
		return Config{}, corrupt(path, "superblock fields this version does not know")
	}
	c := Config{
		Capacity:   le.Uint64(b[sbCapacity:]),
		ErrorRate:  math.Float64frombits(le.Uint64(b[sbErrorRate:])),
		Tightening: math.Float64frombits(le.Uint64(b[sbTightening:])),
		Growth:     math.Float64frombits(le.Uint64(b[sbGrowth:])),
		Seed:       le.Uint64(b[sbSeed:]),
		Fixed:      le.Uint32(b[sbFlags:])&flagFixed != 0,
		// A version 2 file has no presence bits.
		CountersOnly: le.Uint32(b[sbFlags:])&flagCountersOnly != 0 || version == countersOnlyVersion,
	}
	if err := c.params().Validate(); err != nil {
		return Config{}, corrupt(path, "parameters: %v", err)
	}
	return c, nil
}

// dirEntry is a directory entry: the scaling entry plus where its counters are.
type dirEntry struct {
	scaling.Entry
	Offset uint64
}

// directory is a decoded directory slot.
type directory struct {
	generation uint64
	entries    []dirEntry
}

func encodeDirectory(b []byte, d directory) {
	b = b[:PageSize]
	le := binary.LittleEndian
	le.PutUint64(b[dirGeneration:], d.generation)
	le.PutUint32(b[dirCount:], uint32(len(d.entries)))
	for i, e := range d.entries {
		s := b[dirEntries+i*entrySize:][:entrySize]
		le.PutUint32(s[entLevel:], uint32(e.Level))
		le.PutUint32(s[entK:], uint32(e.Geometry.K))
		le.PutUint64(s[entFirstID:], e.FirstID)
		le.PutUint64(s[entCapacity:], e.Capacity)
		le.PutUint64(s[entBlocks:], e.Geometry.Blocks)
		le.PutUint64(s[entOffset:], e.Offset)
		le.PutUint64(s[entFlags:], geometryFlags(e.Geometry))
	}
	clear(b[dirEntries+len(d.entries)*entrySize:])
	le.PutUint32(b[dirCRC:], directoryChecksum(b, len(d.entries)))
}

func directoryChecksum(b []byte, n int) uint32 {
	crc := crc32.Update(0, castagnoli, b[:dirCRC])
	return crc32.Update(crc, castagnoli, b[dirEntries:dirEntries+n*entrySize])
}

// decodeDirectory reads a slot and checks every entry against the file's
// size, so a damaged or hostile directory cannot make the engine map outside
// the file or overlap two sub-filters. ok is false for a slot that fails its
// checksum (never written, or torn). presence says whether the regions hold
// presence bits.
func decodeDirectory(b []byte, fileSize int64, presence bool) (d directory, ok bool, err error) {
	le := binary.LittleEndian
	n := le.Uint32(b[dirCount:])
	if n > scaling.MaxSubFilters || directoryChecksum(b, int(n)) != le.Uint32(b[dirCRC:]) {
		return directory{}, false, nil
	}
	d.generation = le.Uint64(b[dirGeneration:])
	d.entries = make([]dirEntry, n)
	for i := range d.entries {
		s := b[dirEntries+i*entrySize:][:entrySize]
		e := dirEntry{
			Entry: scaling.Entry{
				Level:    int(le.Uint32(s[entLevel:])),
				FirstID:  le.Uint64(s[entFirstID:]),
				Capacity: le.Uint64(s[entCapacity:]),
				Geometry: counting.Geometry{Blocks: le.Uint64(s[entBlocks:]), K: int(le.Uint32(s[entK:])), Flat: le.Uint64(s[entFlags:])&entryFlat != 0},
			},
			Offset: le.Uint64(s[entOffset:]),
		}
		if flags := le.Uint64(s[entFlags:]); flags&^entryFlat != 0 {
			return directory{}, true, fmt.Errorf("sub-filter %d: unknown flags %#x", i, flags)
		}
		if err := e.Geometry.Validate(); err != nil {
			return directory{}, true, fmt.Errorf("sub-filter %d: %w", i, err)
		}
		end := e.Offset + e.Geometry.Bytes() + presenceBytes(e.Geometry, presence)
		if e.Offset < HeaderBytes || e.Offset%PageSize != 0 || end < e.Offset || end > uint64(fileSize) {
			return directory{}, true, fmt.Errorf("sub-filter %d: region at %d..%d outside the file of %d bytes", i, e.Offset, end, fileSize)
		}
		for _, prior := range d.entries[:i] {
			if e.Offset < prior.Offset+regionBytes(prior.Geometry, presence) && prior.Offset < end {
				return directory{}, true, fmt.Errorf("sub-filter %d overlaps another", i)
			}
		}
		d.entries[i] = e
	}
	return d, true, nil
}

// geometryFlags are the entry flags of g.
func geometryFlags(g counting.Geometry) uint64 {
	if g.Flat {
		return entryFlat
	}
	return 0
}

// regionBytes is the room a sub-filter takes in the file: its counters and
// presence bits rounded up to whole pages.
func regionBytes(g counting.Geometry, presence bool) uint64 {
	return (g.Bytes() + presenceBytes(g, presence) + PageSize - 1) / PageSize * PageSize
}

// presenceBytes is the size of the presence bits of a sub-filter of g: none
// in a filter of counters only.
func presenceBytes(g counting.Geometry, presence bool) uint64 {
	if !presence {
		return 0
	}
	return counting.PresenceBytes(g)
}

// talliesOffset is where page 0 holds the tallies of level.
func talliesOffset(level int) int { return offTallies + level*scaling.MetaSize }

// The areas of page 0 must not overlap; these fail to compile if they do.
const (
	_ = uint(offState - sbSize)
	_ = uint(offDirSeq - (offState + seqno.StateAreaSize))
	_ = uint(offJournal - (offDirSeq + 8))
	_ = uint(offTallies - (offJournal + seqno.JournalSize))
	_ = uint(PageSize - (offTallies + scaling.MaxSubFilters*scaling.MetaSize))
	_ = uint(PageSize - (dirEntries + scaling.MaxSubFilters*entrySize))
)
