package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/mirror"
)

// copyJSON is the shape of mirror stats --json: what Redis holds under a
// name.
type copyJSON struct {
	Name         string `json:"name"`
	Live         bool   `json:"live"`
	Generation   uint64 `json:"generation"`
	Seq          uint64 `json:"seq"`
	PartBytes    uint64 `json:"part_bytes"`
	Writer       string `json:"writer"`
	WriterForMS  int64  `json:"writer_for_ms"`
	Pending      uint64 `json:"pending_generation"`
	Reader       string `json:"reader,omitempty"`
	ReaderForMS  int64  `json:"reader_for_ms,omitempty"`
	ReaderHeldMS int64  `json:"reader_held_ms,omitempty"`
	HoldCut      bool   `json:"hold_cut,omitempty"`
	paramsJSON
	Count        uint64 `json:"count"`
	CounterBytes uint64 `json:"counter_bytes"`
	chainJSON
	SubFilters []subFilterJSON `json:"sub_filters"`
	// Memory is the Redis server's that holds the copy, absent where
	// Redis does not let a script ask.
	Memory *memoryJSON `json:"redis_memory,omitempty"`
}

type memoryJSON struct {
	Used   uint64 `json:"used_bytes"`
	Max    uint64 `json:"max_bytes"`
	Policy string `json:"policy"`
}

// warnings are what the Redis server's memory means for a copy of
// counters bytes: a maxmemory policy that may evict its parts, or too
// little room left for a full copy beside it.
func (m memoryJSON) warnings(counters uint64) []string {
	var w []string
	if m.Max > 0 && (mirror.Memory{Policy: m.Policy}).Evicts() {
		w = append(w, fmt.Sprintf("maxmemory-policy %s may evict parts of the copy, which checks then find lost: run Redis with noeviction or a volatile- policy", m.Policy))
	}
	if m.Max > 0 && m.Max < m.Used+counters {
		w = append(w, fmt.Sprintf("Redis has %s of its maxmemory left, too little for a full copy's %s of counters beside this one: the next full copy will fail",
			bytesText(m.Max-min(m.Used, m.Max)), bytesText(counters)))
	}
	return w
}

func copyOf(name string, d mirror.Description) copyJSON {
	j := copyJSON{Name: name, Live: d.Live, Generation: d.Generation, Seq: d.Seq, PartBytes: d.PartBytes,
		Writer: d.Writer, WriterForMS: d.WriterFor.Milliseconds(), Pending: d.Pending,
		Reader: d.Reader, ReaderForMS: d.ReaderFor.Milliseconds(), ReaderHeldMS: d.ReaderHeld.Milliseconds(), HoldCut: d.HoldCut,
		paramsJSON: paramsOf(d.Config), SubFilters: []subFilterJSON{}, chainJSON: chainOf(d.Config, len(d.SubFilters))}
	for _, sub := range d.SubFilters {
		j.Count += sub.Count
		j.CounterBytes += sub.Bytes
		j.SubFilters = append(j.SubFilters, subFilterJSON{
			Level: sub.Level, FirstID: sub.FirstID, MaxID: sub.MaxID, Capacity: sub.Capacity, Count: sub.Count,
			Fill: float64(sub.Count) / float64(sub.Capacity), Overfilled: sub.Count > sub.Capacity,
			ExpectedErrorRate: sub.ExpectedFalsePositiveRate(), K: sub.K, Bytes: sub.Bytes,
		})
	}
	if m := d.Memory; m != nil {
		j.Memory = &memoryJSON{Used: m.Used, Max: m.Max, Policy: m.Policy}
	}
	return j
}

func mirrorStatsCommand() *cobra.Command {
	var remote redisFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats --redis URL --name NAME",
		Short: "Show what Redis holds under a name",
		Long: `Show the copy Redis holds under NAME (its generation, the sequence of the
last change it holds, its parameters and a table of its sub-filters), the
process that writes its copies (whose claim on the name expires unless
renewed), a copy being written, if there is one, a reader that holds the
copy while it reads it whole (a mirror pull, say), and the memory of the
Redis server that holds it: it warns of a maxmemory-policy that may evict
the copy's parts, and of too little room left for a full copy beside it.
A name Redis holds nothing of is an error.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := remote.dial()
			if err != nil {
				return err
			}
			defer client.Close()
			d, err := mirror.Describe(cmd.Context(), client, remote.name)
			if err != nil {
				return err
			}
			j := copyOf(remote.name, d)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(j)
			}
			printCopyTo(cmd.OutOrStdout(), j)
			return nil
		},
	}
	remote.register(cmd, true)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printCopyTo(out io.Writer, c copyJSON) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	defer w.Flush()
	fmt.Fprintf(w, "name\t%s\n", c.Name)
	writer := "none"
	if c.Writer != "" {
		writer = fmt.Sprintf("%s (its claim lasts %s unless renewed)", c.Writer, (time.Duration(c.WriterForMS) * time.Millisecond).Round(100*time.Millisecond))
	}
	fmt.Fprintf(w, "writer\t%s\n", writer)
	if c.Pending != 0 {
		fmt.Fprintf(w, "pending\ta copy of generation %d, not yet live\n", c.Pending)
	}
	ms := func(n int64) time.Duration {
		return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond)
	}
	switch held := ""; {
	case c.HoldCut:
		fmt.Fprintf(w, "held\tno longer: the writer cut the hold %s took %s ago (mirror.Options.MaxHold), and no reader holds the copy for %s\n",
			c.Reader, ms(c.ReaderHeldMS), ms(c.ReaderForMS))
	case c.Reader != "":
		if c.ReaderHeldMS > 0 {
			held = " for " + ms(c.ReaderHeldMS).String()
		}
		fmt.Fprintf(w, "held\tby %s, reading the whole copy%s (its hold lasts %s unless renewed): the writer ships no change meanwhile, for its mirror.Options.MaxHold at most\n",
			c.Reader, held, ms(c.ReaderForMS))
	}
	if !c.Live {
		fmt.Fprintf(w, "copy\tnone live\n")
		return
	}
	fmt.Fprintf(w, "copy\tgeneration %d at sequence %d, in parts of at most %s\n", c.Generation, c.Seq, bytesText(c.PartBytes))
	fmt.Fprintf(w, "parameters\t%s\n", c.text())
	fmt.Fprintf(w, "keys\t%d added minus removed\n", c.Count)
	fmt.Fprintf(w, "counters\t%s in %s\n", bytesText(c.CounterBytes), c.subFilters(len(c.SubFilters)))
	c.printWarningTo(w)
	if m := c.Memory; m != nil {
		limit := ", no maxmemory"
		if m.Max > 0 {
			limit = " of a maxmemory of " + bytesText(m.Max)
		}
		fmt.Fprintf(w, "redis\t%s used%s, policy %s\n", bytesText(m.Used), limit, m.Policy)
		for _, warning := range m.warnings(c.CounterBytes) {
			fmt.Fprintf(w, "warning\t%s\n", warning)
		}
	}
	printSubFiltersTo(w, c.SubFilters)
}
