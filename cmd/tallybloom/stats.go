package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/flock"
)

// statsJSON is the shape of stats --json.
type statsJSON struct {
	File string `json:"file"`
	paramsJSON
	Count         uint64  `json:"count"`
	EstimatedKeys float64 `json:"estimated_keys"`
	MemSeq        uint64  `json:"mem_seq"`
	DiskSeq       uint64  `json:"disk_seq"`
	State         string  `json:"state"`
	CounterBytes  uint64  `json:"counter_bytes"`
	PresenceBytes uint64  `json:"presence_bytes"`
	chainJSON
	SubFilters []subFilterJSON `json:"sub_filters"`
	// Writer is the process that has the file open for writing, where the
	// system says (Linux); absent when none has or it cannot tell.
	Writer *writerJSON `json:"writer,omitempty"`
	// Next is the sub-filter the chain opens next, absent where none will
	// (a fixed filter, a full chain), and FreeBytes the room its file
	// system has for it, absent where the system does not say.
	Next      *nextJSON `json:"next_sub_filter,omitempty"`
	FreeBytes *uint64   `json:"free_bytes,omitempty"`
	// Writeback is the kernel's writeback thresholds, where the system
	// says (Linux): a filter larger than its background threshold is
	// warned of.
	Writeback *writebackJSON `json:"writeback,omitempty"`
}

type nextJSON struct {
	Level     int     `json:"level"`
	Capacity  uint64  `json:"capacity"`
	ErrorRate float64 `json:"error_rate"`
	FileBytes uint64  `json:"file_bytes"`
}

// nextOf is the sub-filter f opens next, and the room the file system of
// dir has for it, where the system says.
func nextOf(f *engine.Filter, dir string) (*nextJSON, *uint64) {
	plan, ok := f.NextSubFilter()
	if !ok {
		return nil, nil
	}
	next := &nextJSON{Level: plan.Level, Capacity: plan.Capacity, ErrorRate: plan.ErrorRate, FileBytes: plan.FileBytes}
	if free, ok := freeBytes(dir); ok {
		return next, &free
	}
	return next, nil
}

// noRoomForNext says that free bytes are too little for the next
// sub-filter, where they are.
func noRoomForNext(next *nextJSON, free *uint64) (string, bool) {
	if next == nil || free == nil || *free >= next.FileBytes {
		return "", false
	}
	return fmt.Sprintf("the file system has %s free, too little for the next sub-filter's %s: the add that opens it will fail",
		bytesText(*free), bytesText(next.FileBytes)), true
}

// chainJSON says how many sub-filters the chain can hold, and whether it
// holds that many, so that a monitor sees a chain of Growth 1 near its end
// before adds fail with ErrChainFull.
type chainJSON struct {
	MaxSubFilters int  `json:"max_sub_filters"`
	ChainFull     bool `json:"chain_full"`
}

func chainOf(c engine.Config, subs int) chainJSON {
	if c.Fixed {
		return chainJSON{MaxSubFilters: 1} // never grows: it overfills
	}
	return chainJSON{MaxSubFilters: engine.MaxSubFilters, ChainFull: subs >= engine.MaxSubFilters}
}

// subFilters is the chain's count of sub-filters, with the most it holds.
func (c chainJSON) subFilters(subs int) string {
	if c.MaxSubFilters > 1 {
		return fmt.Sprintf("%s (at most %d)", counted(subs, "sub-filter"), c.MaxSubFilters)
	}
	return counted(subs, "sub-filter")
}

// printWarningTo warns, under the counters line, of a chain that holds all
// the sub-filters it can.
func (c chainJSON) printWarningTo(w io.Writer) {
	if c.ChainFull {
		fmt.Fprintf(w, "warning\tthe chain holds all %d sub-filters it can: once the newest is full, adds fail until drop-before retires old ones\n", c.MaxSubFilters)
	}
}

type writerJSON struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
}

// writerOf names the process holding path's writer lock, or nil.
func writerOf(path string) *writerJSON {
	file, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer file.Close()
	if pid, name := flock.Holder(file); pid != 0 {
		return &writerJSON{PID: pid, Command: name}
	}
	return nil
}

// paramsJSON are a filter's persisted parameters, in stats --json and
// mirror stats --json.
type paramsJSON struct {
	Capacity     uint64  `json:"capacity"`
	ErrorRate    float64 `json:"error_rate"`
	Tightening   float64 `json:"tightening"`
	Growth       float64 `json:"growth"`
	Fixed        bool    `json:"fixed"`
	CountersOnly bool    `json:"counters_only"`
	Seed         uint64  `json:"seed"`
}

func paramsOf(c engine.Config) paramsJSON {
	return paramsJSON{Capacity: c.Capacity, ErrorRate: c.ErrorRate, Tightening: c.Tightening, Growth: c.Growth,
		Fixed: c.Fixed, CountersOnly: c.CountersOnly, Seed: c.Seed}
}

func (p paramsJSON) text() string {
	return fmt.Sprintf("capacity %d, error rate %g, tightening %g, growth %g, fixed %v, counters only %v, seed %#x",
		p.Capacity, p.ErrorRate, p.Tightening, p.Growth, p.Fixed, p.CountersOnly, p.Seed)
}

type subFilterJSON struct {
	Level             int     `json:"level"`
	FirstID           uint64  `json:"first_id"`
	MaxID             uint64  `json:"max_id"`
	Capacity          uint64  `json:"capacity"`
	Count             uint64  `json:"count"`
	Fill              float64 `json:"fill"`
	Overfilled        bool    `json:"overfilled"`
	ErrorRate         float64 `json:"error_rate"`
	ExpectedErrorRate float64 `json:"expected_error_rate"`
	K                 int     `json:"k"`
	Bytes             uint64  `json:"bytes"`
	EstimatedKeys     float64 `json:"estimated_keys"`
}

func statsOf(path string, s engine.Stats) statsJSON {
	j := statsJSON{
		File: path, paramsJSON: paramsOf(s.Config), Count: s.Count,
		EstimatedKeys: s.EstimatedKeys, MemSeq: s.MemSeq, DiskSeq: s.DiskSeq, State: "clean",
		CounterBytes: s.CounterBytes, PresenceBytes: s.PresenceBytes, SubFilters: []subFilterJSON{},
		chainJSON: chainOf(s.Config, len(s.SubFilters)),
	}
	if s.DiskSeq != s.MemSeq {
		j.State = "dirty" // changes since the last flush are not all on disk
	}
	for _, sub := range s.SubFilters {
		j.SubFilters = append(j.SubFilters, subFilterJSON{
			Level: sub.Level, FirstID: sub.FirstID, MaxID: sub.MaxID, Capacity: sub.Capacity, Count: sub.Count,
			Fill: float64(sub.Count) / float64(sub.Capacity), Overfilled: sub.Overfilled, ErrorRate: sub.ErrorRate,
			ExpectedErrorRate: sub.ExpectedFalsePositiveRate(), K: sub.K, Bytes: sub.Bytes, EstimatedKeys: sub.EstimatedKeys,
		})
	}
	return j
}

func statsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats FILE",
		Short: "Show a filter's parameters, sub-filters and state",
		Long: `Show the parameters, a table of sub-filters (id range, capacity, count, fill,
expected false-positive rate, bytes), the sub-filter the chain opens next
and the room it takes (with a warning where the disk has too little), the
sequence numbers and the file's state, with a warning where the filter is
larger than the dirty pages the kernel lets stay before it writes them back
on its own (Linux), as a filter changed all over then waits for the disk.
Opens the file read-only: it works while a writer runs, and names that
writer where the system says who it is (Linux).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := openFilter(args[0], &engine.Options{ReadOnly: true})
			if err != nil {
				return err
			}
			defer f.Close()
			s := statsOf(args[0], f.Stats())
			s.Writer = writerOf(args[0])
			s.Next, s.FreeBytes = nextOf(f, filepath.Dir(args[0]))
			s.Writeback = writebackNow()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			printStatsTo(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printStatsTo(out io.Writer, s statsJSON) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	defer w.Flush()
	fmt.Fprintf(w, "file\t%s\n", s.File)
	fmt.Fprintf(w, "state\t%s (memory sequence %d, durable sequence %d)\n", s.State, s.MemSeq, s.DiskSeq)
	if s.Writer != nil {
		fmt.Fprintf(w, "writer\tprocess %d", s.Writer.PID)
		if s.Writer.Command != "" {
			fmt.Fprintf(w, ", %s", s.Writer.Command)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "parameters\t%s\n", s.text())
	fmt.Fprintf(w, "keys\t%d added minus removed, about %.0f distinct\n", s.Count, s.EstimatedKeys)
	fmt.Fprintf(w, "counters\t%s in %s, presence bits %s\n", bytesText(s.CounterBytes), s.subFilters(len(s.SubFilters)), bytesText(s.PresenceBytes))
	s.printWarningTo(w)
	if s.Next != nil {
		fmt.Fprintf(w, "next\tlevel %d, for %d keys at %.2g: %s, reserved when the newest is full\n",
			s.Next.Level, s.Next.Capacity, s.Next.ErrorRate, bytesText(s.Next.FileBytes))
	}
	if why, ok := noRoomForNext(s.Next, s.FreeBytes); ok {
		fmt.Fprintf(w, "warning\t%s\n", why)
	}
	if why, ok := tooLargeForWriteback(s.CounterBytes+s.PresenceBytes, s.Writeback); ok {
		fmt.Fprintf(w, "warning\t%s\n", why)
	}
	printSubFiltersTo(w, s.SubFilters)
}

// printSubFiltersTo prints the table of sub-filters; a rate they were
// built for of 0 is one not known (a copy in Redis does not keep it). Where
// the ids are Unix seconds, as add gives by default, a column gives their
// range as times, which drop-before --older-than goes by.
func printSubFiltersTo(w io.Writer, subs []subFilterJSON) {
	newest := newestID(subs)
	asTimes := newest != 0 && notSeconds(newest, time.Now()) == nil
	fmt.Fprintln(w)
	if asTimes {
		fmt.Fprintln(w, "level\tids\tadded (UTC)\tcapacity\tcount\tfill\tfalse positives\tbytes")
	} else {
		fmt.Fprintln(w, "level\tids\tcapacity\tcount\tfill\tfalse positives\tbytes")
	}
	for i, sub := range subs {
		ids := fmt.Sprintf("%d..", sub.FirstID)
		times := idTime(sub.FirstID) + ".."
		if i+1 < len(subs) {
			ids = fmt.Sprintf("%d..%d", sub.FirstID, subs[i+1].FirstID-1)
			times += idTime(subs[i+1].FirstID - 1)
		}
		if asTimes {
			ids += "\t" + times
		}
		fill := fmt.Sprintf("%.0f%%", 100*sub.Fill)
		if sub.Overfilled {
			fill += " (overfilled)"
		}
		rate := fmt.Sprintf("%.2g", sub.ExpectedErrorRate)
		if sub.ErrorRate > 0 {
			rate += fmt.Sprintf(" (built for %.2g)", sub.ErrorRate)
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%s\t%s\t%s\n", sub.Level, ids, sub.Capacity, sub.Count, fill, rate, bytesText(sub.Bytes))
	}
}

// idTime is an id of Unix seconds as a time to the minute, UTC, or nothing
// for an id before 2000 (the first sub-filter's first id, 0).
func idTime(id uint64) string {
	if id < earliestSeconds {
		return ""
	}
	return time.Unix(int64(id), 0).UTC().Format("2006-01-02 15:04")
}

// bytesText is n bytes in the largest binary unit they fill, to a tenth.
func bytesText(n uint64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
