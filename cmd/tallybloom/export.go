package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
)

func exportCommand() *cobra.Command {
	var frozen, asBase64 bool
	cmd := &cobra.Command{
		Use:   "export FILE OUT",
		Short: "Write a compact, portable copy of a filter",
		Long: `Write FILE to OUT ("-" for standard output) as a portable stream without
page padding, which import reads back and engine.ReadExport loads in
memory. --frozen writes a read-only 1-bit Bloom filter instead, a quarter of
the counters' size, that check accepts in place of FILE and
engine.ReadFrozen loads. --base64 writes either as URL-safe base64, for a
cookie or a config value. OUT is replaced whole once the copy is written
and synced, so a reader of OUT sees the old copy or the new; a filter file
is never written over. The copy is written beside OUT under a hidden name
(.OUT.writing-...), which an interrupted export (SIGINT, SIGTERM) removes;
one a process killed outright left behind, the next export to OUT removes.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := openFilter(args[0], filterOptions(cmd, true))
			if err != nil {
				return err
			}
			defer f.Close()
			var out io.Writer = cmd.OutOrStdout()
			var file *output
			if args[1] != "-" {
				if file, err = createOutput(args[1], args[0]); err != nil {
					return err
				}
				defer file.abort()
				out = file
			}
			buffered := bufio.NewWriter(out)
			var w io.Writer = buffered
			var encoder io.WriteCloser
			if asBase64 {
				encoder = base64.NewEncoder(base64.RawURLEncoding, buffered)
				w = encoder
			}
			write := f.Export
			if frozen {
				write = f.ExportFrozen
			}
			if err := write(w); err != nil {
				return err
			}
			if encoder != nil {
				if err := encoder.Close(); err != nil {
					return err
				}
				if args[1] == "-" {
					fmt.Fprintln(buffered)
				}
			}
			if err := buffered.Flush(); err != nil {
				return err
			}
			if file != nil {
				return file.commit()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&frozen, "frozen", false, "write a read-only 1-bit Bloom filter")
	cmd.Flags().BoolVar(&asBase64, "base64", false, "write URL-safe base64")
	largePagesFlag(cmd)
	return cmd
}

// layoutFlags are --presence-bits and --counters-only, for the commands
// that make a file from a copy of a filter.
type layoutFlags struct{ presenceBits, countersOnly bool }

func (l *layoutFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&l.presenceBits, "presence-bits", false, "keep presence bits, whatever the copy's filter kept")
	cmd.Flags().BoolVar(&l.countersOnly, "counters-only", false, "keep counters only, whatever the copy's filter kept")
	cmd.MarkFlagsMutuallyExclusive("presence-bits", "counters-only")
}

// chosen reports whether either flag was given.
func (l *layoutFlags) chosen() bool { return l.presenceBits || l.countersOnly }

// layoutText says what a new file's room holds.
func layoutText(s engine.Stats) string {
	text := fmt.Sprintf("%s of counters", bytesText(s.CounterBytes))
	if s.PresenceBytes > 0 {
		text += fmt.Sprintf(", %s of presence bits", bytesText(s.PresenceBytes))
	}
	return text
}

func importCommand() *cobra.Command {
	var layout layoutFlags
	cmd := &cobra.Command{
		Use:   "import IN FILE",
		Short: "Create a filter file from an export",
		Long: `Create FILE from the export IN ("-" for standard input), binary or base64.
FILE keeps presence bits or not as the exported filter did, unless
--presence-bits or --counters-only says otherwise: exporting a filter and
importing it the other way changes its layout (see create). IN must hold
one export and nothing after it: if more follows, FILE is not made.
--replace makes FILE in place of a filter file there, unless a writer has
it open; if the import fails, that file stays as it was.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, size, closeIn, err := exportStream(args[0], cmd.InOrStdin())
			if err != nil {
				return err
			}
			defer closeIn()
			p := newProgress(cmd.ErrOrStderr(), "import", size)
			// One export and nothing after it: more is two exports joined,
			// or bytes appended, which would otherwise go unseen.
			whole := engine.WholeStream(p.reader(in))
			var f *engine.Filter
			if layout.chosen() {
				f, err = engine.ImportAs(args[1], whole, layout.countersOnly, filterOptions(cmd, false))
			} else {
				f, err = engine.Import(args[1], whole, filterOptions(cmd, false))
			}
			if err != nil {
				return inExport(args[0], err)
			}
			s := f.Stats()
			p.keys = s.Count
			if err := f.Close(); err != nil {
				return err
			}
			p.summary("imported %s in %s (%s)", counted(s.Count, "key"), counted(len(s.SubFilters), "sub-filter"), layoutText(s))
			return nil
		},
	}
	layout.register(cmd)
	largePagesFlag(cmd)
	replaceFlag(cmd)
	return cmd
}
