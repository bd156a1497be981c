package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/urlkey"
)

func demoCommand() *cobra.Command {
	var seed uint64
	cmd := &cobra.Command{
		Use:   "demo [DIR]",
		Short: "Run the whole story on generated spam reports",
		Long: `Build a filter of a week of generated spam URL reports, with their report
times as ids; check URLs with roll-up; remove false reports; retire the
oldest day; close, reopen (timing the open: nothing is rebuilt) and show the
stats. In a temporary directory, or in DIR (which keeps the file). Needs no
network.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 1 {
				dir = args[0]
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
			} else {
				tmp, err := os.MkdirTemp("", "tallybloom-demo")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			}
			return demo(cmd.OutOrStdout(), cmd.ErrOrStderr(), filepath.Join(dir, "spam.tb"), seed)
		},
	}
	// With a random seed, a URL never reported is a false positive one run
	// in a few hundred (a roll-up checks several keys at 0.1% each).
	cmd.Flags().Uint64Var(&seed, "seed", 0, "hash seed, for the same answers every run (default: random)")
	return cmd
}

// The demo's week: reportsPerDay spam reports a day, starting at weekStart.
const (
	day           = 24 * 60 * 60
	weekStart     = 1_767_225_600 // 2026-01-01T00:00:00Z
	days          = 7
	reportsPerDay = 40_000
)

// spamURL is the i-th generated report: whole domains, subdomains of a
// hoster, and paths on shared hosts, in varied case and with noise a
// canonical form drops.
func spamURL(rng *rand.Rand, i int) string {
	switch i % 3 {
	case 0:
		return fmt.Sprintf("http://win-prize-%d.example/", i)
	case 1:
		return fmt.Sprintf("https://Promo%d.Cheap-Hosting.example:8443/?utm=%d", i, rng.IntN(1000))
	}
	return fmt.Sprintf("https://pages.example.net/u%d/free-gift#top", i)
}

func demo(out, errOut io.Writer, path string, seed uint64) error {
	step := func(format string, args ...any) { fmt.Fprintf(out, "\n== "+format+"\n", args...) }

	step("create %s", path)
	// A day of reports fills a sub-filter, so each day gets its own and a
	// day can be retired whole.
	f, err := engine.Create(path, engine.Config{Capacity: reportsPerDay, ErrorRate: 0.001, Growth: 1, Seed: seed}, nil)
	if err != nil {
		return err
	}
	c := f.Config()
	fmt.Fprintf(out, "capacity %d keys a sub-filter (a day of reports), error rate %g for the whole chain, growth %g, seed %#x\n",
		c.Capacity, c.ErrorRate, c.Growth, c.Seed)

	step("add a week of spam reports, the report time as id (add --url --with-ids)")
	rng := rand.New(rand.NewPCG(7, 7))
	p := newKeyProgress(errOut, "add", days*reportsPerDay)
	for i := range days * reportsPerDay {
		key, err := urlkey.Canonical(spamURL(rng, i))
		if err != nil {
			return err
		}
		id := uint64(weekStart + i*day/reportsPerDay)
		if err := f.AddString(key, id); err != nil {
			return err
		}
		p.advance()
	}
	p.summary("added %d reports", p.keys)
	fmt.Fprintf(out, "%d sub-filters, %s of counters\n", len(f.Stats().SubFilters), bytesText(f.Stats().CounterBytes))

	step("check URLs with roll-up (check --rollup)")
	w := out
	for _, url := range []string{
		"https://WIN-PRIZE-3.example/claim?now=1",      // a reported domain, another path
		"http://shop.win-prize-30.example/",            // a subdomain of a reported domain
		"https://promo4.cheap-hosting.example/landing", // a reported host
		"https://pages.example.net/u5/free-gift/step2", // below a reported path
		`http://PAGES.example.net\u5\x\..\%66ree-gift`, // a reported path, written otherwise
		"https://pages.example.net/u6/about",           // same host, a path never reported
		"https://docs.example.org/getting-started",     // never reported
		"https://cheap-hosting.example/pricing",        // the hoster itself was not reported
	} {
		results, badLine, err := checkKeys(localChecker{f}, []keyItem{{key: url}}, withRollup, nil)
		if err := errors.Join(badLine, err); err != nil {
			return err
		}
		if err := writeCheck(w, results[0], false); err != nil {
			return err
		}
	}

	step("remove false reports, with the ids they were added with (remove --with-ids)")
	removed, first := 0, ""
	rng = rand.New(rand.NewPCG(7, 7))
	for i := range 3 * reportsPerDay {
		key, _ := urlkey.Canonical(spamURL(rng, i))
		if i%3 == 0 && i >= 2*reportsPerDay {
			if err := f.RemoveString(key, uint64(weekStart+i*day/reportsPerDay)); err != nil {
				return err
			}
			if removed == 0 {
				first = key
			}
			removed++
		}
	}
	fmt.Fprintf(out, "removed %d reports of day 3; the first of them, %s, present: %v\n",
		removed, first, f.ContainsString(first))

	step("retire the oldest day (drop-before %d)", weekStart+day)
	before := f.Stats()
	dropped, err := f.DropBefore(weekStart + day)
	if err != nil {
		return err
	}
	after := f.Stats()
	fmt.Fprintf(out, "dropped %s: %d -> %d keys, %s -> %s of counters given back to the disk\n",
		counted(dropped, "sub-filter"), before.Count, after.Count, bytesText(before.CounterBytes), bytesText(after.CounterBytes))
	fmt.Fprintf(out, "win-prize-0.example (reported on day 1) present: %v\n", f.ContainsString("win-prize-0.example"))

	step("close and reopen: the file is the filter, nothing is rebuilt")
	if err := f.Close(); err != nil {
		return err
	}
	start := time.Now()
	f, err = engine.Open(path, nil)
	if err != nil {
		return err
	}
	opened := time.Since(start)
	defer f.Close()
	fmt.Fprintf(out, "opened %s of counters in %s; %d keys ready; a reported URL present: %v\n",
		bytesText(f.Stats().CounterBytes), opened.Round(time.Microsecond), f.Stats().Count,
		f.ContainsString(fmt.Sprintf("win-prize-%d.example", 6*reportsPerDay)))

	step("stats")
	printStatsTo(out, statsOf(path, f.Stats()))
	return nil
}
