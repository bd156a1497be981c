package main

import (
	"time"

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

// flushWhenIdleFlag registers --flush-when-idle on a command that changes a
// filter as its input comes.
func flushWhenIdleFlag(cmd *cobra.Command) {
	cmd.Flags().Duration("flush-when-idle", time.Second,
		"flush FILE once the input has waited this long (engine Options.FlushWhenIdle), so that a machine crash while it waits finds FILE clean; 0: only at the end")
}

// replaceFlag registers --replace on a command that makes a filter file
// from a copy of one.
func replaceFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("replace", false,
		"replace FILE if it is a filter file no writer has open (engine Options.Replace): one a machine crash left unclean, say")
}

// filterOptions are the options a command opens or makes its filter with:
// read-only or not, with large pages if its --large-pages says so, flushed
// when idle as its --flush-when-idle says, and in place of a filter file
// if its --replace says so.
func filterOptions(cmd *cobra.Command, readOnly bool) *engine.Options {
	large, _ := cmd.Flags().GetBool("large-pages")
	idle, _ := cmd.Flags().GetDuration("flush-when-idle")
	replace, _ := cmd.Flags().GetBool("replace")
	return &engine.Options{ReadOnly: readOnly, LargePages: large, FlushWhenIdle: idle, Replace: replace}
}
