package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/urlkey"
)

// checkResult is one line of check --json.
type checkResult struct {
	Key     string `json:"key"`
	Present bool   `json:"present"`
	Match   string `json:"match,omitempty"`
}

func checkCommand() *cobra.Command {
	var quiet, asJSON, asURL, rollup, keepGoing bool
	var remote redisFlags
	cmd := &cobra.Command{
		Use:   "check FILE [KEY ...]",
		Short: "Check keys",
		Long: `Print present<TAB>KEY or absent<TAB>KEY for each key (of the arguments, or
of standard input, one a line, each answered before the command waits for
more input). Exits 0 when every key is present, 1 when
any is absent. FILE may be a filter file, an export or a frozen export,
binary or base64; an export may come through a pipe (check <(curl -s URL)
KEY, or /dev/stdin). With --name NAME there is no FILE: keys are checked
against the copy in Redis at --redis URL, or at $TALLYBLOOM_REDIS (see
mirror push), with the same output. A filter file renamed over FILE while
check reads keys (as import --replace and mirror pull --replace put one
there) is checked from the next keys on, and standard error says so.

--url treats each key as a URL and checks the canonical form add --url
stores it under. --rollup checks that form and its parents: the host with
each path prefix, the host, and each parent domain down to the registrable
one (example.co.uk, not co.uk). A URL is present when any of them is; the
line names the match. A line that is not a URL ends the command, the keys
before it answered; with --keep-going it is reported and left out, the
command goes on, and exits 2 at the end.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if !remote.remote() && len(args) < 1 {
				return usageError(cmd, fmt.Errorf("FILE is required (or --name, with --redis or %s)", redisEnv))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var c batchChecker
			if remote.remote() {
				rc, closeRedis, err := remote.checker(cmd.Context())
				if err != nil {
					return err
				}
				defer closeRedis()
				c = rc
			} else {
				local, closeFilter, err := openForCheck(args[0], filterOptions(cmd, true), cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer closeFilter()
				c = local
				args = args[1:]
			}
			form := asKeys
			if asURL {
				form = asURLs
			} else if rollup {
				form = withRollup
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			absent := 0
			var pending []keyItem
			skipper := &lineSkipper{report: func(line string) {
				out.Flush() // the answers of earlier batches first
				fmt.Fprintln(cmd.ErrOrStderr(), line)
			}, args: len(args) > 0}
			var skip func(error)
			if keepGoing {
				skip = skipper.skip
			}
			flush := func() error {
				if len(pending) == 0 {
					return nil
				}
				results, badLine, err := checkKeys(c, pending, form, skip)
				if err != nil {
					return err
				}
				for _, r := range results {
					if !r.Present {
						absent++
					}
					if !quiet {
						if err := writeCheck(out, r, asJSON); err != nil {
							return err
						}
					}
				}
				pending = pending[:0]
				if badLine != nil {
					return fmt.Errorf("%w (the keys before it were checked)", badLine)
				}
				return nil
			}
			// Before each wait for more input, the keys read are answered
			// and the answers written, so that keys fed slowly are
			// answered as they come.
			reader := newKeyReader(cmd.InOrStdin(), func() error {
				return errors.Join(flush(), out.Flush())
			})
			err := eachKey(args, reader, keyOptions{skip: skip}, func(k keyItem) error {
				if pending = append(pending, k); len(pending) == checkBatch {
					return flush()
				}
				return nil
			})
			if err == nil {
				err = flush()
			}
			if err != nil {
				return err
			}
			if err := skipper.err("the other keys were checked"); err != nil {
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
	cmd.Flags().BoolVar(&asURL, "url", false, "keys are URLs, checked in the canonical form add --url stores")
	cmd.Flags().BoolVar(&rollup, "rollup", false, "check each URL and its parent domains and paths")
	cmd.MarkFlagsMutuallyExclusive("url", "rollup")
	keepGoingFlag(cmd, &keepGoing)
	remote.register(cmd, false)
	largePagesFlag(cmd)
	return cmd
}

// checkBatch is the number of keys checked in one go (one round trip to
// Redis).
const checkBatch = 512

// batchChecker answers many keys at once.
type batchChecker interface {
	ContainsBatch(keys []string) ([]bool, error)
}

// followingChecker checks against the filter file its path names: before
// each batch of keys it looks whether another file was renamed over the
// path (the way a filter file is replaced, by import --replace or mirror
// pull --replace) and checks against that one from then on, so that a
// check fed for days does not answer from a file no writer changes any
// more.
type followingChecker struct {
	file *followedFile
	said io.Writer
}

func (c *followingChecker) ContainsBatch(keys []string) ([]bool, error) {
	c.file.follow(c.said, "checking", "checked")
	return localChecker{c.file}.ContainsBatch(keys)
}

// localChecker is a filter, an export or a frozen export.
type localChecker struct{ c checker }

func (l localChecker) ContainsBatch(keys []string) ([]bool, error) {
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i] = l.c.ContainsString(k)
	}
	return out, nil
}

// checkForm is what check looks for a key under.
type checkForm int

const (
	asKeys     checkForm = iota // the key as it is
	asURLs                      // the key as a URL, in canonical form (urlkey.Canonical)
	withRollup                  // the URL and its parents (urlkey.Rollup)
)

// checkKeys checks items, in form, all in one batch; with rollup the most
// specific of a URL's candidates that is present is the match. An item
// that is not a URL is given to skip and left out or, without skip, ends
// the batch: the items before it are answered, and badLine says which line
// it was.
func checkKeys(c batchChecker, items []keyItem, form checkForm, skip func(error)) (results []checkResult, badLine, err error) {
	var keys []string
	var checked []keyItem
	spans := make([][2]int, 0, len(items)) // each checked item's candidates in keys
	for _, item := range items {
		candidates := []string{item.key}
		var notURL error
		switch form {
		case withRollup:
			candidates, notURL = urlkey.Rollup(item.key)
		case asURLs:
			candidates[0], notURL = urlkey.Canonical(item.key)
		}
		if notURL != nil {
			notURL = fmt.Errorf("%v: %w", item.at, notURL)
			if skip == nil {
				badLine = notURL
				break
			}
			skip(notURL)
			continue
		}
		checked = append(checked, item)
		spans = append(spans, [2]int{len(keys), len(keys) + len(candidates)})
		keys = append(keys, candidates...)
	}
	items = checked
	if len(items) == 0 {
		return nil, badLine, nil
	}
	present, err := c.ContainsBatch(keys)
	if err != nil {
		return nil, nil, err
	}
	results = make([]checkResult, len(items))
	for i, item := range items {
		results[i] = checkResult{Key: item.key}
		for j := spans[i][0]; j < spans[i][1]; j++ {
			if present[j] {
				results[i].Present = true
				if form == withRollup {
					results[i].Match = keys[j]
				}
				break
			}
		}
	}
	return results, badLine, nil
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
