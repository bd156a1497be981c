package main

import (
	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
)

// largePagesFlag registers --large-pages on a command that maps a filter
// file. A range of the file keeps the page size of the process that
// brought it into memory while it stays there, whichever process maps it
// later: a file a command wrote or read in 4 KiB pages would give a
// service that opens it with LargePages none.
func largePagesFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("large-pages", false, "map the filter with 2 MiB pages (engine Options.LargePages), as the service that opens it does")
}

// filterOptions are the options a command opens or makes its filter with:
// read-only or not, and with large pages if its --large-pages says so.
func filterOptions(cmd *cobra.Command, readOnly bool) *engine.Options {
	large, _ := cmd.Flags().GetBool("large-pages")
	return &engine.Options{ReadOnly: readOnly, LargePages: large}
}
