package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tallybloom/tallybloom/mmapfile"
	"github.com/tallybloom/tallybloom/scaling"
	"github.com/tallybloom/tallybloom/seqno"
)

// Verify checks the filter file at path end to end: the header's checksums
// and fields, the directory, a change left in flight, and for every
// sub-filter that its tallies agree with its counters: the non-zero counters
// are counted exactly and, while no counter is saturated, the counters sum to
// k times the count; that its presence bits agree with its counters; and
// that the bytes docs/FORMAT.md keeps zero in the header and in each region's
// padding are zero. It reads every counter, so its cost grows with the file.
// Room between regions is not read: a writer killed before it gave a retired
// region back leaves the region's bytes there, and the next writer's Open
// gives them back.
//
// Verify opens the file read-only and takes no lock. It returns nil, or an
// error that errors.Is ErrCorrupt (or ErrUnclean, ErrVersion) and says, one
// line a problem, what is wrong. A writer changing the file while Verify
// reads it makes counters and tallies disagree for a moment: problems found
// while a writer holds the file, or while its sequence moved, are not called
// damage but ErrBusy, to verify again with the writer stopped.
func Verify(path string) error { return VerifyWith(path, nil) }

// VerifyWith is Verify with opts, which it opens the file with read-only
// whatever opts.ReadOnly says. Verify reads every page of the file, so a
// check before a service starts decides the size of the pages the service
// then finds in the page cache: give opts.LargePages as the service does.
func VerifyWith(path string, opts *Options) error {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.ReadOnly = true
	f, err := Open(path, &o)
	if err != nil {
		return err
	}
	defer f.Close()
	before := f.journal.MemSeq()
	problems := f.verify()
	if len(problems) == 0 {
		return nil
	}
	running, who := writer(path, true)
	if after := f.journal.MemSeq(); after != before || running {
		return fmt.Errorf("%w: %s: a writer was changing the file (sequence %d to %d) while verify read it%s, and what looked wrong may be its changes in flight; verify again with the writer stopped, or verify an export of the filter", ErrBusy, path, before, after, who)
	}
	return fmt.Errorf("%w: %s: %d problem(s):\n  %s", ErrCorrupt, path, len(problems), strings.Join(problems, "\n  "))
}

// writer reports whether a writer holds the file at path (whether its
// lock is taken) and, if named is set and the system says, who:
// lockHolder's words, which read the system's list of locks.
func writer(path string, named bool) (running bool, who string) {
	probe, err := mmapfile.Open(path, os.O_RDONLY, 0, nil)
	if err != nil {
		return false, ""
	}
	defer probe.Close()
	if !errors.Is(probe.Lock(), mmapfile.ErrLocked) {
		return false, ""
	}
	if named {
		who = lockHolder(probe)
	}
	return true, who
}

// verify lists every inconsistency it finds, in words a person can act on.
func (f *Filter) verify() []string {
	var problems []string
	if _, pending, err := f.journal.Pending(); err != nil {
		problems = append(problems, fmt.Sprintf("the undo record is damaged (%v): the change in flight cannot be undone; rebuild the filter", err))
	} else if pending {
		// The counters of a change in flight are half written; their check
		// would only repeat this.
		return append(problems, fmt.Sprintf("change %d was in flight when its writer stopped: open the file for writing once to undo it, then verify again", f.journal.MemSeq()+1))
	}
	for slot := range 2 {
		d, valid, err := decodeDirectory(f.directorySlot(slot), 1<<62, f.config.presence())
		if valid && err != nil {
			problems = append(problems, fmt.Sprintf("directory slot %d is damaged: %v", slot, err))
		}
		if valid {
			problems = appendNonZero(problems, fmt.Sprintf("directory slot %d, past its entries,", slot),
				f.directorySlot(slot)[dirEntries+len(d.entries)*entrySize:])
		}
	}
	problems = f.appendHeaderNonZero(problems)
	for i, sub := range f.chain.SubFilters() {
		name := fmt.Sprintf("sub-filter %d (level %d, ids from %d)", i, sub.Level, sub.FirstID)
		sum, nonZero, saturated := sub.Filter().Tally()
		if nonZero != sub.NonZero() {
			problems = append(problems, fmt.Sprintf("%s: %d counters are non-zero but its tallies say %d: the tallies or the counters were changed outside tallybloom; rebuild the filter", name, nonZero, sub.NonZero()))
		}
		if want := uint64(sub.Geometry.K) * sub.Count(); saturated == 0 && sum != want {
			problems = append(problems, fmt.Sprintf("%s: its counters sum to %d but %d keys of %d counters each need %d: counters were lost or added outside tallybloom; rebuild the filter", name, sum, sub.Count(), sub.Geometry.K, want))
		}
		if stale := sub.Filter().StalePresence(); stale > 0 {
			problems = append(problems, fmt.Sprintf("%s: the presence bits of %d blocks disagree with their counters: lookups there answer wrongly; rebuild the filter", name, stale))
		}
		if sub.Count() > 0 && sub.MaxID() < sub.FirstID {
			problems = append(problems, fmt.Sprintf("%s: holds keys but its highest id %d is below its first id", name, sub.MaxID()))
		}
		if sub.Count() == 0 && nonZero > saturated {
			problems = append(problems, fmt.Sprintf("%s: holds no key but %d counters below 15 are non-zero", name, nonZero-saturated))
		}
		sp := spaceOf(sub)
		problems = appendNonZero(problems, name+": the padding after its counters and presence bits",
			sp.region.Bytes()[len(sp.counters)+len(sp.presence):])
	}
	return problems
}

// appendHeaderNonZero checks the room of page 0 that the format keeps zero:
// between its areas, the journal's padding and each level's unused tally.
func (f *Filter) appendHeaderNonZero(problems []string) []string {
	between := [][2]int{
		{sbCRC + 4, offState},
		{offState + seqno.StateSize, offState + seqno.StateSpare},
		{offState + seqno.StateAreaSize, offDirSeq},
		{offDirSeq + 8, offJournal},
		{offJournal + seqno.JournalSize, offTallies},
	}
	for _, r := range between {
		problems = appendNonZero(problems, fmt.Sprintf("page 0, bytes %d..%d,", r[0], r[1]-1), f.page0[r[0]:r[1]])
	}
	problems = appendNonZero(problems, "the journal's padding", f.journal.Padding())
	for level := range scaling.MaxSubFilters {
		tallies := f.page0[talliesOffset(level):][:scaling.MetaSize]
		problems = appendNonZero(problems, fmt.Sprintf("the tallies of level %d, past their fields,", level), tallies[scaling.MetaUsed:])
	}
	return problems
}

// appendNonZero reports room the format keeps zero that is not. Nothing the
// engine reads depends on it, so Open accepts such a file; but only damage,
// or a program other than tallybloom, writes there.
func appendNonZero(problems []string, where string, room []byte) []string {
	for i, b := range room {
		if b != 0 {
			return append(problems, fmt.Sprintf("%s which the format keeps zero, has %#02x at byte %d: the file was damaged or written by another program; the filter's answers do not depend on these bytes, but check the disk and the programs that write the file", where, b, i))
		}
	}
	return problems
}
