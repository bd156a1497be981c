package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
)

func verifyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check a filter file end to end",
		Long: `Check a filter file end to end: header checksums, the directory, a change
left in flight, that each sub-filter's counts and presence bits agree with
its counters, and that the bytes the format keeps zero are zero.
Exits 0 when the file is whole, 1 when it is a damaged filter (saying what
is wrong and what to do), 2 when it cannot be checked (missing, not a
filter, or a writer changed it while verify read it and something looked
wrong: verify again with the writer stopped).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := engine.VerifyWith(args[0], filterOptions(cmd, true))
			switch {
			case errors.Is(err, engine.ErrNotFilter):
				return withExportHint(args[0], err) // not ours: an error, not a verdict
			case err == nil:
				fmt.Fprintf(cmd.OutOrStdout(), "ok\t%s\n", args[0])
				return nil
			case errors.Is(err, engine.ErrUnclean):
				return &exitCode{code: exitNo, err: withUncleanHint(args[0], err)}
			case errors.Is(err, engine.ErrCorrupt), errors.Is(err, engine.ErrVersion):
				return &exitCode{code: exitNo, err: err}
			}
			return err
		},
	}
	largePagesFlag(cmd)
	return cmd
}
