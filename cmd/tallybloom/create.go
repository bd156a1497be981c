package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
)

func createCommand() *cobra.Command {
	var cfg engine.Config
	cmd := &cobra.Command{
		Use:   "create FILE --capacity N --error-rate P",
		Short: "Create a filter file",
		Long: `Create a filter file. The chain's false-positive rate stays at or below
--error-rate however far it grows; --capacity is the number of keys of its
first sub-filter. --fixed makes one sub-filter for the whole rate that never
grows (adds past capacity are accepted and show as overfilled).
--counters-only leaves out the presence bits that lookups read: the file is
a fifth smaller and lookups read the counters, which take four times the
room, so a filter larger than the cache answers more slowly.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := engine.Create(args[0], cfg, nil)
			if err != nil {
				return err
			}
			c := f.Config()
			fmt.Fprintf(cmd.OutOrStdout(), "created %s: capacity %d, error rate %g, tightening %g, growth %g, fixed %v, counters only %v, seed %#x\n",
				args[0], c.Capacity, c.ErrorRate, c.Tightening, c.Growth, c.Fixed, c.CountersOnly, c.Seed)
			// What the parameters cost, before any key is added: the
			// question of whoever sizes a filter of billions of keys.
			s := f.Stats()
			first := s.SubFilters[0]
			if info, err := os.Stat(args[0]); err == nil {
				presence := ""
				if s.PresenceBytes > 0 {
					presence = " and " + bytesText(s.PresenceBytes) + " of presence bits"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "the file takes %s: its first sub-filter, for %d keys at %.2g, holds %s of counters%s\n",
					bytesText(uint64(info.Size())), first.Capacity, first.ErrorRate, bytesText(s.CounterBytes), presence)
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
	_ = cmd.MarkFlagRequired("capacity")
	_ = cmd.MarkFlagRequired("error-rate")
	return cmd
}
