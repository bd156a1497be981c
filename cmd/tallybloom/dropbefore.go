package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
)

func dropBeforeCommand() *cobra.Command {
	var olderThan string
	cmd := &cobra.Command{
		Use:   "drop-before FILE {ID | --older-than AGE}",
		Short: "Retire every sub-filter whose ids are all older than ID",
		Long: `Retire every sub-filter whose whole id range is older than ID and give its
disk space back. With insertion timestamps as ids, this expires old entries
a sub-filter at a time. The newest sub-filter is never retired.

--older-than AGE takes ID as that long before now, in Unix seconds, the
ids add gives by default: 30d, 36h, 1d12h (days, then what Go's durations
take: h, m, s). It refuses a filter whose ids are not Unix seconds (ids
before 2000, or in the future: milliseconds, say), where that cut-off
would retire the wrong sub-filters.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch given := cmd.Flags().Changed("older-than"); {
			case len(args) == 0 || len(args) > 2:
				return usageError(cmd, fmt.Errorf("want FILE and ID, or FILE and --older-than, got %d arguments", len(args)))
			case len(args) == 2 && given:
				return usageError(cmd, errors.New("give ID or --older-than, not both"))
			case len(args) == 1 && !given:
				return usageError(cmd, errors.New("ID is required (or --older-than)"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var age time.Duration
			var id uint64
			var err error
			if len(args) == 2 {
				if id, err = strconv.ParseUint(args[1], 10, 64); err != nil {
					return usageError(cmd, fmt.Errorf("ID %q is not a whole number", args[1]))
				}
			} else if age, err = parseAge(olderThan); err != nil {
				return usageError(cmd, err)
			}
			f, err := openFilter(args[0], nil)
			if err != nil {
				return err
			}
			if age > 0 {
				if id, err = cutOff(statsOf(args[0], f.Stats()).SubFilters, time.Now(), age); err != nil {
					f.Close()
					return err
				}
			}
			dropped, err := f.DropBefore(id)
			if err != nil {
				f.Close()
				return err
			}
			before := ""
			if age > 0 {
				before = fmt.Sprintf(" (before id %d, %s)", id, time.Unix(int64(id), 0).UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dropped %s%s; %d left, the oldest from id %d\n",
				counted(dropped, "sub-filter"), before, len(f.Stats().SubFilters), f.Stats().SubFilters[0].FirstID)
			return f.Close()
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "retire what is older than AGE before now (30d, 36h), ids being Unix seconds")
	return cmd
}

// parseAge reads an age: whole days ("30d"), then a Go duration ("12h"),
// either of them optional but not both. It must be positive.
func parseAge(s string) (time.Duration, error) {
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("--older-than %q: %s; want days and a Go duration, as 30d, 36h or 1d12h", s, why)
	}
	days, rest, hasDays := strings.Cut(s, "d")
	var age time.Duration
	if hasDays {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return bad("not a whole number of days")
		}
		age = time.Duration(n) * 24 * time.Hour
	} else {
		rest = s
	}
	if rest != "" || !hasDays {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return bad(strings.TrimPrefix(err.Error(), "time: "))
		}
		age += d
	}
	if age <= 0 {
		return bad("not after zero")
	}
	return age, nil
}

// earliestSeconds is 2000-01-01 in Unix seconds: a filter whose ids are
// insertion times in seconds holds none older.
const earliestSeconds = 946684800

// notSeconds says why a filter whose highest id added is newest does not
// have Unix seconds as ids, if it does not: an id before 2000 is a sequence
// number or the like, one more than a day ahead of now a time in finer
// units. A filter with nothing added passes.
func notSeconds(newest uint64, now time.Time) error {
	switch {
	case newest != 0 && newest < earliestSeconds:
		return fmt.Errorf("the newest id added, %d, is before 2000 as Unix seconds, so the ids are not times in seconds", newest)
	case newest > uint64(now.Add(24*time.Hour).Unix()):
		return fmt.Errorf("the newest id added, %d, is after tomorrow as Unix seconds, so the ids are not times in seconds (milliseconds?)", newest)
	}
	return nil
}

// newestID is the highest id added to any of subs, 0 if none was.
func newestID(subs []subFilterJSON) uint64 {
	var newest uint64
	for _, sub := range subs {
		newest = max(newest, sub.MaxID)
	}
	return newest
}

// cutOff is the id age before now, for a filter whose ids are Unix seconds:
// for other ids a cut-off in seconds would retire too much or nothing.
func cutOff(subs []subFilterJSON, now time.Time, age time.Duration) (uint64, error) {
	if err := notSeconds(newestID(subs), now); err != nil {
		return 0, fmt.Errorf("%w: --older-than: %w; give the ID to drop before", engine.ErrInvalidInput, err)
	}
	return uint64(max(now.Add(-age).Unix(), 0)), nil
}
