package seqno

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strings"
	"unsafe"

	"github.com/tallybloom/tallybloom/internal/release"
)

// The state's layout. Never change these: they are part of the file format.
//
//	0        4        8                16                               32       36
//	+--------+--------+----------------+--------------------------------+--------+
//	| dirty  | 0      | durable seq    | boot id                        | crc32c |
//	| u32    | u32    | u64            | [16]byte                       | u32    |
//	+--------+--------+----------------+--------------------------------+--------+
//
// The state area holds it twice: the state at 0, its spare copy at 64,
// zero between.
const (
	stateDirty   = 0
	stateDurable = 8
	stateBoot    = 16
	stateCRC     = 32
	// StateSize is the size of the encoded state.
	StateSize = 36
	// StateSpare is where the spare copy starts in the state area.
	StateSpare = 64
	// StateAreaSize is the size of the state area.
	StateAreaSize = StateSpare + StateSize
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BootID names one boot of one machine.
type BootID [16]byte

// State says whether the file holds changes that may not be on disk.
type State struct {
	// Dirty is set before the first change after a flush and cleared by the
	// next flush.
	Dirty bool
	// DurableSeq is the memory sequence at the last flush: every change up to
	// it is on disk.
	DurableSeq uint64
	// Boot is the boot during which the file went dirty.
	Boot BootID
}

// Outcome is what a State means to the process that opens the file.
type Outcome int

const (
	// Clean: closed or flushed, nothing changed since.
	Clean Outcome = iota
	// ProcessCrash: changed since the last flush during this boot, so the page
	// cache still holds every change; an undo record may need applying.
	ProcessCrash
	// MachineCrash: changed since the last flush during an earlier boot (or a
	// boot that cannot be told apart), so some changes may be lost.
	MachineCrash
)

// Outcome classifies s for a process running in boot current. When the
// platform has no boot id (known is false) a dirty file counts as a machine
// crash: it is never assumed to be whole.
func (s State) Outcome(current BootID, known bool) Outcome {
	switch {
	case !s.Dirty:
		return Clean
	case known && s.Boot == current:
		return ProcessCrash
	default:
		return MachineCrash
	}
}

// Encode writes s into b[:StateSize].
func (s State) Encode(b []byte) {
	b = b[:StateSize]
	var dirty uint32
	if s.Dirty {
		dirty = 1
	}
	binary.LittleEndian.PutUint32(b[stateDirty:], dirty)
	binary.LittleEndian.PutUint32(b[stateDirty+4:], 0)
	binary.LittleEndian.PutUint64(b[stateDurable:], s.DurableSeq)
	copy(b[stateBoot:stateCRC], s.Boot[:])
	binary.LittleEndian.PutUint32(b[stateCRC:], crc32.Checksum(b[:stateCRC], castagnoli))
}

// DecodeState reads a State written by Encode.
func DecodeState(b []byte) (State, error) {
	if len(b) < StateSize {
		return State{}, fmt.Errorf("%w: state of %d bytes", ErrCorrupt, len(b))
	}
	if crc32.Checksum(b[:stateCRC], castagnoli) != binary.LittleEndian.Uint32(b[stateCRC:]) {
		return State{}, fmt.Errorf("%w: state checksum mismatch", ErrCorrupt)
	}
	dirty := binary.LittleEndian.Uint32(b[stateDirty:])
	if dirty > 1 || binary.LittleEndian.Uint32(b[stateDirty+4:]) != 0 {
		return State{}, fmt.Errorf("%w: state flags %d", ErrCorrupt, dirty)
	}
	s := State{Dirty: dirty == 1, DurableSeq: binary.LittleEndian.Uint64(b[stateDurable:])}
	copy(s.Boot[:], b[stateBoot:stateCRC])
	return s, nil
}

// StateArea is the state and its spare copy over a caller's region,
// usually a mapped page of the file.
//
// A state is a few dozen bytes that no store writes at once, so a process
// killed while it rewrites them leaves them half written. Store therefore
// writes one copy whole before it starts on the other, and Load reads the
// spare when the state does not decode: one of the two always holds a
// whole state, the old one or the new.
type StateArea struct {
	region []byte
	// next is scratch room for the state Store encodes; a field, so that
	// checksumming with hash/crc32 does not allocate.
	next [StateSize]byte
}

// NewStateArea returns a StateArea over region[:StateAreaSize]; region must
// be 8-byte aligned.
func NewStateArea(region []byte) (*StateArea, error) {
	region, err := alignedArea(region, StateAreaSize, "state area")
	if err != nil {
		return nil, err
	}
	return &StateArea{region: region}, nil
}

// Store writes s into both copies, one whole before the other: the spare
// first, unless the state does not decode, when the spare may be the only
// whole copy and the state goes first. The second copy's first word is
// stored with release order, so that in the page cache, and to any
// reader, none of its new bytes comes before the first copy's last. Only
// one goroutine, in any process, may call Store.
func (a *StateArea) Store(s State) {
	b := a.next[:]
	s.Encode(b)
	first, second := a.region[StateSpare:], a.region[:StateSize]
	if _, err := DecodeState(second); err != nil {
		first, second = second, first
	}
	copy(first[:StateSize], b)
	release.Store64((*uint64)(unsafe.Pointer(&second[0])), binary.LittleEndian.Uint64(b[:8]))
	copy(second[8:StateSize], b[8:])
}

// Load reads the state; if it does not decode, because a Store was cut
// short while it wrote it (or a reader in another process caught one in
// the act), the spare copy, and spare is true: a writer then stores it
// again, so that both copies are whole. An area that neither decodes from
// is damage.
func (a *StateArea) Load() (s State, spare bool, err error) {
	if s, err = DecodeState(a.region[:StateSize]); err == nil {
		return s, false, nil
	}
	s, spareErr := DecodeState(a.region[StateSpare:])
	if spareErr != nil {
		why := strings.TrimPrefix(spareErr.Error(), ErrCorrupt.Error()+": ")
		return State{}, false, fmt.Errorf("%w; its spare copy: %s", err, why)
	}
	return s, true, nil
}

// bootTimeID names a boot by when it began, for kernels that keep no random
// boot id: the seconds of the kernel's boot time (kern.boottime on macOS and
// the BSDs, the time of day information on Windows) and its fraction of a
// second, in the unit the kernel gives it (microseconds; nanoseconds on
// NetBSD, 100 ns on Windows), each as 8 little-endian bytes. Two
// boots of a machine do not begin at the same instant, so the id is new at
// every boot. The kernel moves its boot time when the system clock is
// stepped (not when it is slewed), so a process killed after such a step is
// taken for a machine crash: the safe side, as the file is then not trusted.
func bootTimeID(sec, frac int64) (BootID, error) {
	var id BootID
	if sec <= 0 || frac < 0 {
		return id, fmt.Errorf("%w: boot time %d s and %d", ErrNoBootID, sec, frac)
	}
	binary.LittleEndian.PutUint64(id[0:], uint64(sec))
	binary.LittleEndian.PutUint64(id[8:], uint64(frac))
	return id, nil
}

// ParseBootID reads a boot id in the kernel's UUID form.
func ParseBootID(s string) (BootID, error) {
	var id BootID
	digits := strings.ReplaceAll(strings.TrimSpace(s), "-", "")
	if len(digits) != 2*len(id) {
		return id, fmt.Errorf("%w: malformed boot id %q", ErrNoBootID, s)
	}
	if _, err := hex.Decode(id[:], []byte(digits)); err != nil {
		return id, fmt.Errorf("%w: malformed boot id %q", ErrNoBootID, s)
	}
	return id, nil
}
