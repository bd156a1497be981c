package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func dropBeforeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "drop-before FILE ID",
		Short: "Retire every sub-filter whose ids are all older than ID",
		Long: `Retire every sub-filter whose whole id range is older than ID and give its
disk space back. With insertion timestamps as ids, this expires old entries
a sub-filter at a time. The newest sub-filter is never retired.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseUint(args[1], 10, 64)
			if err != nil {
				return usageError(cmd, fmt.Errorf("ID %q is not a whole number", args[1]))
			}
			f, err := openFilter(args[0], nil)
			if err != nil {
				return err
			}
			dropped, err := f.DropBefore(id)
			if err != nil {
				f.Close()
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dropped %s; %d left, the oldest from id %d\n",
				counted(dropped, "sub-filter"), len(f.Stats().SubFilters), f.Stats().SubFilters[0].FirstID)
			return f.Close()
		},
	}
}
