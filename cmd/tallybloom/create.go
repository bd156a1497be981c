package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
)

func createCommand() *cobra.Command {
	var cfg engine.Config
	var dryRun bool
	var holding uint64
	cmd := &cobra.Command{
		Use:   "create FILE --capacity N --error-rate P",
		Short: "Create a filter file",
		Long: `Create a filter file. The chain's false-positive rate stays at or below
--error-rate however far it grows; --capacity is the number of keys of its
first sub-filter. --fixed makes one sub-filter for the whole rate that never
grows (adds past capacity are accepted and show as overfilled).
--counters-only leaves out the presence bits that lookups read: the file is
a fifth smaller and lookups read the counters, which take four times the
room, so a filter larger than the cache answers more slowly.

create says what the file takes, reserved on disk at once, and with
--holding N what it will take once N keys are added with none retired, in
the sub-filters the chain opens for them, and what a copy in Redis takes:
it refuses a chain that cannot hold N, and warns when the file system has
too little room for the sub-filters still to come, and when the file is
larger than the dirty pages the kernel lets stay before it writes them
back on its own (Linux; see stats). --dry-run says so, and
how much room the directory's file system has left, and creates nothing:
it exits 1 when the room is too little.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fp, err := engine.FootprintOf(cfg)
			if err != nil {
				return err
			}
			plan := []string{footprintText(fp)}
			need := fp.FileBytes
			copied := redisText(fp, "")
			if cmd.Flags().Changed("holding") {
				// A filter that cannot hold the keys asked for is refused
				// before it is made.
				grown, err := engine.FootprintHolding(cfg, holding)
				if err != nil {
					return err
				}
				plan = append(plan, holdingText(grown, holding))
				need = grown.FileBytes
				copied = redisText(grown, fmt.Sprintf("holding %d keys, ", holding))
			}
			plan = append(plan, copied)
			out := cmd.OutOrStdout()
			if why, ok := tooLargeForWriteback(need, writebackNow()); ok {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", why)
			}
			if dryRun {
				if _, err := os.Lstat(args[0]); err == nil {
					return fmt.Errorf("%w: %s (it would take %s)", engine.ErrExists, args[0], plan[0])
				}
				fmt.Fprintf(out, "%s would take %s\n", args[0], strings.Join(plan, "\n"))
				// The room is reserved as the file grows: say whether it
				// is there, and whether the directory create would make it
				// in is.
				dir := filepath.Dir(args[0])
				if _, err := os.Stat(dir); err != nil {
					return err
				}
				if free, ok := freeBytes(dir); ok && free < need {
					return &exitCode{code: exitNo, err: fmt.Errorf("%s has %s free: too little for %s", dir, bytesText(free), bytesText(need))}
				} else if ok {
					fmt.Fprintf(out, "%s has %s free\n", dir, bytesText(free))
				}
				return nil
			}
			f, err := engine.Create(args[0], cfg, nil)
			if err != nil {
				return err
			}
			c := f.Config()
			fmt.Fprintf(out, "created %s: capacity %d, error rate %g, tightening %g, growth %g, fixed %v, counters only %v, seed %#x\n",
				args[0], c.Capacity, c.ErrorRate, c.Tightening, c.Growth, c.Fixed, c.CountersOnly, c.Seed)
			// What the parameters cost, before any key is added: the
			// question of whoever sizes a filter of billions of keys.
			fmt.Fprintf(out, "the file takes %s\n", strings.Join(plan, "\n"))
			// The first sub-filter's room is reserved now, the rest as
			// the chain opens them: warn now if it is not there.
			if later := need - fp.FileBytes; later > 0 {
				if free, ok := freeBytes(filepath.Dir(args[0])); ok && free < later {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s has %s free, too little for the %s more it takes holding %d keys\n",
						filepath.Dir(args[0]), bytesText(free), bytesText(later), holding)
				}
			}
			return f.Close()
		},
	}
	flags := cmd.Flags()
	flags.Uint64Var(&cfg.Capacity, "capacity", 0, "keys in the first sub-filter (required)")
	flags.Float64Var(&cfg.ErrorRate, "error-rate", 0, "false-positive bound of the whole chain, 0 < P < 1 (required)")
	flags.Float64Var(&cfg.Tightening, "tightening", engine.DefaultTightening, "ratio of error rates between sub-filters")
	flags.Float64Var(&cfg.Growth, "growth", engine.DefaultGrowth, "capacity factor between sub-filters (1 keeps them equal)")
	flags.Uint64Var(&cfg.Seed, "seed", 0, "hash seed (default: random)")
	flags.BoolVar(&cfg.Fixed, "fixed", false, "one sub-filter for the whole error rate, never growing")
	flags.BoolVar(&cfg.CountersOnly, "counters-only", false, "no presence bits: a fifth less room, slower lookups")
	flags.BoolVar(&dryRun, "dry-run", false, "say what the file would take, and create nothing")
	flags.Uint64Var(&holding, "holding", 0, "also say what the file takes once N keys are added, none retired")
	_ = cmd.MarkFlagRequired("capacity")
	_ = cmd.MarkFlagRequired("error-rate")
	return cmd
}

// footprintText is what a new filter takes: the file, and its first
// sub-filter's counters and presence bits at the rate it is built for.
func footprintText(fp engine.Footprint) string {
	presence := ""
	if fp.PresenceBytes > 0 {
		presence = " and " + bytesText(fp.PresenceBytes) + " of presence bits"
	}
	return fmt.Sprintf("%s: its first sub-filter, for %d keys at %.2g, holds %s of counters%s",
		bytesText(fp.FileBytes), fp.Capacity, fp.ErrorRate, bytesText(fp.CounterBytes), presence)
}

// redisText is what a copy of a filter of footprint fp takes in Redis: its
// counters, one string a sub-filter (the presence bits stay in the file),
// and the room of a second copy while a full copy is written beside the
// live one (see mirror.ErrRedisFull). Redis's allocator rounds each string
// up, hence "at least".
func redisText(fp engine.Footprint, holding string) string {
	return fmt.Sprintf("%sa copy in Redis (mirror push) takes at least %s, its counters, and twice that while a full copy replaces the live one",
		holding, bytesText(fp.CounterBytes))
}

// holdingText is what a filter of footprint fp takes holding keys keys.
func holdingText(fp engine.Footprint, keys uint64) string {
	switch {
	case fp.SubFilters > 1:
		return fmt.Sprintf("holding %d keys, none retired, it takes %s in %d sub-filters, built for %d keys together, their false-positive rate under %.2g",
			keys, bytesText(fp.FileBytes), fp.SubFilters, fp.Capacity, fp.ErrorRate)
	case keys > fp.Capacity:
		return fmt.Sprintf("holding %d keys it takes the same %s, overfilled: its one sub-filter is built for %d keys, and its false-positive rate rises above %.2g",
			keys, bytesText(fp.FileBytes), fp.Capacity, fp.ErrorRate)
	}
	return fmt.Sprintf("holding %d keys it takes the same %s, in its first sub-filter", keys, bytesText(fp.FileBytes))
}
