package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// checkResult is one line of check --json.
type checkResult struct {
	Key     string `json:"key"`
	Present bool   `json:"present"`
	Match   string `json:"match,omitempty"`
}

func checkCommand() *cobra.Command {
	var quiet, asJSON, rollup bool
	cmd := &cobra.Command{
		Use:   "check FILE [KEY ...]",
		Short: "Check keys",
		Long: `Print present<TAB>KEY or absent<TAB>KEY for each key (of the arguments, or
of standard input, one a line). Exits 0 when every key is present, 1 when
any is absent. FILE may be a filter file, an export or a frozen export,
binary or base64.

--rollup treats each key as a URL and checks it and its parents, in the
canonical form add --url stores: the host with each path prefix, the host,
and each parent domain down to the registrable one (example.co.uk, not
co.uk). A URL is present when any of them is; the line names the match.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError(cmd, fmt.Errorf("FILE is required"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, closeFilter, err := openForCheck(args[0])
			if err != nil {
				return err
			}
			defer closeFilter()
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			absent := 0
			err = eachKey(args[1:], cmd.InOrStdin(), keyOptions{}, func(k keyItem) error {
				r, err := checkKey(c, k.key, rollup)
				if err != nil {
					return fmt.Errorf("line %d: %w", k.line, err)
				}
				if !r.Present {
					absent++
				}
				if quiet {
					return nil
				}
				return writeCheck(out, r, asJSON)
			})
			if err != nil {
				return err
			}
			if absent > 0 {
				return &exitCode{code: exitNo} // the lines say which
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing; the exit code answers")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object a line")
	cmd.Flags().BoolVar(&rollup, "rollup", false, "check each URL and its parent domains and paths")
	return cmd
}

// checkKey checks key, or with rollup the URL key and its parents.
func checkKey(c checker, key string, rollup bool) (checkResult, error) {
	r := checkResult{Key: key}
	if !rollup {
		r.Present = c.ContainsString(key)
		return r, nil
	}
	candidates, err := rollupCandidates(key)
	if err != nil {
		return r, err
	}
	for _, candidate := range candidates {
		if c.ContainsString(candidate) {
			r.Present, r.Match = true, candidate
			break
		}
	}
	return r, nil
}

func writeCheck(out io.Writer, r checkResult, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(out).Encode(r)
	}
	state := "absent"
	if r.Present {
		state = "present"
	}
	line := state + "\t" + r.Key
	if r.Match != "" {
		line += "\t" + r.Match
	}
	_, err := fmt.Fprintln(out, line)
	return err
}
