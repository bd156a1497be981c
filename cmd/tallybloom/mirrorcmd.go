package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/mirror"
)

// redisEnv names the environment variable --redis defaults to, so that a
// URL holding a password need not be on a command line, which every user of
// the machine can read.
const redisEnv = "TALLYBLOOM_REDIS"

// redisFlags are --redis, --name and --cluster.
type redisFlags struct {
	url, name string
	cluster   bool
}

// register adds the flags to cmd. With required, the command always works
// on Redis; without, it does when --name is given.
func (r *redisFlags) register(cmd *cobra.Command, required bool) {
	cmd.Flags().StringVar(&r.url, "redis", "", "Redis URL: redis://[user:password@]host:port, or rediss:// for TLS (default: $"+redisEnv+")")
	cmd.Flags().StringVar(&r.name, "name", "", "the filter's name in Redis")
	cmd.Flags().BoolVar(&r.cluster, "cluster", false, "Redis is a cluster (more nodes as ?addr=host:port)")
	if required {
		_ = cmd.MarkFlagRequired("name")
	}
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if r.url == "" {
			r.url = os.Getenv(redisEnv)
		}
		switch {
		case !required && r.name == "" && cmd.Flags().Changed("redis"):
			return usageError(cmd, errors.New("--redis needs --name"))
		case (required || r.name != "") && r.url == "":
			return usageError(cmd, fmt.Errorf("no Redis: give --redis URL, or set %s", redisEnv))
		}
		return nil
	}
}

// remote reports whether the command works on Redis (see register).
func (r *redisFlags) remote() bool { return r.name != "" }

func (r *redisFlags) dial() (mirror.Redis, error) {
	if r.cluster {
		return mirror.DialCluster(r.url)
	}
	return mirror.Dial(r.url)
}

// checker is a Checker on the copy named by the flags.
func (r *redisFlags) checker(ctx context.Context) (batchChecker, func() error, error) {
	client, err := r.dial()
	if err != nil {
		return nil, nil, err
	}
	c, err := mirror.NewChecker(ctx, client, r.name)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return remoteChecker{ctx, c}, client.Close, nil
}

type remoteChecker struct {
	ctx context.Context
	c   *mirror.Checker
}

func (r remoteChecker) ContainsBatch(keys []string) ([]bool, error) {
	batch := make([][]byte, len(keys))
	for i, k := range keys {
		batch[i] = []byte(k)
	}
	return r.c.ContainsBatch(r.ctx, batch, nil)
}

func mirrorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Copy a filter into Redis and back",
	}
	cmd.AddCommand(mirrorPushCommand(), mirrorPullCommand(), mirrorStatsCommand())
	return cmd
}

// minEvery is the shortest --every: shorter, a follower would spin.
const minEvery = 10 * time.Millisecond

// maxRetry is the longest a follower waits after failed copies, unless
// --every is longer.
const maxRetry = 30 * time.Second

// nextRetry is the wait after a failed copy, the last having waited retry
// (0 after a copy that succeeded): twice the last, from every up to
// maxRetry, or every if that is longer.
func nextRetry(retry, every time.Duration) time.Duration {
	return min(max(2*retry, every), max(every, maxRetry))
}

func mirrorPushCommand() *cobra.Command {
	var remote redisFlags
	var follow bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "push FILE --redis URL --name NAME",
		Short: "Copy a filter file into Redis",
		Long: `Copy FILE into Redis under NAME, replacing the copy there in one switch
(checkers see the old copy or the new). The copy is consistent at one
sequence: taken between two of the writer's changes, or refused if the
writer never paused long enough (about 1.3 s of attempts). With --follow,
keep going: copy again whenever the file and the copy in Redis differ (the
file changed, a new file was renamed over FILE, which is then the one
followed once it opens, or Redis lost the copy), until interrupted; a copy
that fails (Redis away, a writer that does not pause) is reported on
standard error and tried again, each time after twice as long, up to 30 s.
A name another process writes copies under (a mirror attached to its file,
another push) is refused, or waited for with --follow; a follower holds the
name until it stops. A process that owns the file ships its changes one by
one instead (mirror.Attach).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if every < minEvery {
				return usageError(cmd, fmt.Errorf("%w: --every must be at least %s, not %s", engine.ErrInvalidInput, minEvery, every))
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := remote.dial()
			if err != nil {
				return err
			}
			defer client.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			file, err := openFollowed(args[0], filterOptions(cmd, true))
			if err != nil {
				return err
			}
			defer func() { file.Close() }()
			// Following, the name stays claimed between pushes, so that no
			// other writer copies under it meanwhile.
			pusher, err := mirror.NewPusher(client, remote.name, nil)
			if err != nil {
				return err
			}
			defer pusher.Close()
			// Redis holds the file as it is now: the copy this pusher made
			// last, at the file's sequence. Unknown (Redis away) is no.
			current := func() bool {
				held, _ := pusher.Holds(ctx, file.Stats().MemSeq)
				return held
			}
			var retry time.Duration // the wait after the last failed copy
			for first := true; ; first = false {
				// A file renamed over FILE is the one to follow from then
				// on, copied at once: its sequence says nothing of what
				// Redis holds, which came from the old one.
				renewed := follow && !first && file.follow(cmd.ErrOrStderr(), "copying", "copied")
				if first || renewed || !current() {
					seq, err := pusher.Push(ctx, file.Filter)
					if errors.Is(err, mirror.ErrRedisFull) {
						err = fmt.Errorf("%w (%s holds %s of counters)", err, args[0], bytesText(file.Stats().CounterBytes))
					}
					switch {
					case err == nil:
						retry = 0
						fmt.Fprintf(cmd.OutOrStdout(), "pushed %s to %s as %q at sequence %d\n", args[0], mirror.Redact(remote.url), remote.name, seq)
					case follow && ctx.Err() != nil:
						return nil // interrupted while following
					case !follow || errors.Is(err, mirror.ErrBadAnswer) || errors.Is(err, mirror.ErrInvalidName):
						return err
					default:
						retry = nextRetry(retry, every)
						fmt.Fprintf(cmd.ErrOrStderr(), "tallybloom: not pushed, trying again in %s: %v\n", retry, err)
					}
				} else {
					retry = 0
				}
				if !follow {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(max(every, retry)):
				}
			}
		},
	}
	remote.register(cmd, true)
	cmd.Flags().BoolVar(&follow, "follow", false, "copy again whenever the file changes, until interrupted")
	cmd.Flags().DurationVar(&every, "every", time.Second, "with --follow, how often to look for changes (after a failed copy, twice as long each time, up to 30s)")
	largePagesFlag(cmd)
	return cmd
}

func mirrorPullCommand() *cobra.Command {
	var remote redisFlags
	var layout layoutFlags
	cmd := &cobra.Command{
		Use:   "pull FILE --redis URL --name NAME",
		Short: "Create a filter file from its copy in Redis",
		Long: `Create FILE from the copy named NAME in Redis: byte-identical counters, same
parameters, directory and sequence. The copy is read at one sequence: a
change its writer ships meanwhile starts the read again, and a copy that
kept changing for about 1.3 s of reads is refused. FILE keeps presence
bits or not as the filter the copy came from did, unless --presence-bits
or --counters-only says otherwise. --replace makes FILE in place of a
filter file there (one a machine crash left unclean), unless a writer has
it open; if the pull fails, that file stays as it was.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := remote.dial()
			if err != nil {
				return err
			}
			defer client.Close()
			start := time.Now()
			var f *engine.Filter
			if layout.chosen() {
				f, err = mirror.RestoreAs(cmd.Context(), client, remote.name, args[0], layout.countersOnly, filterOptions(cmd, false))
			} else {
				f, err = mirror.Restore(cmd.Context(), client, remote.name, args[0], filterOptions(cmd, false))
			}
			if errors.Is(err, mirror.ErrNotMirrored) {
				return fmt.Errorf("%w: %q on %s", err, remote.name, mirror.Redact(remote.url))
			}
			if err != nil {
				return err
			}
			s := f.Stats()
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pulled %q into %s: %s in %s at sequence %d (%s), in %s\n",
				remote.name, args[0], counted(s.Count, "key"), counted(len(s.SubFilters), "sub-filter"), s.MemSeq, layoutText(s), time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	remote.register(cmd, true)
	layout.register(cmd)
	largePagesFlag(cmd)
	replaceFlag(cmd)
	return cmd
}

// followedFile is the filter file a follower copies or checks: the file
// its path names, opened again when another is renamed over it (the way to
// replace a filter file), so that a follower does not go on with a file
// that lost its name for ever.
type followedFile struct {
	*engine.Filter
	opts *engine.Options
	// refused is why the file renamed over the path could not be opened,
	// at the last look: said again only when the reason changes.
	refused string
}

// openFollowed opens path, and opens it again if a file was renamed over it
// meanwhile.
func openFollowed(path string, opts *engine.Options) (*followedFile, error) {
	for attempt := 1; ; attempt++ {
		f, err := openFilter(path, opts)
		if err != nil {
			return nil, err
		}
		if replaced, err := f.Replaced(); err == nil && !replaced {
			return &followedFile{Filter: f, opts: opts}, nil
		}
		if err := f.Close(); err != nil || attempt == 3 {
			return nil, errors.Join(fmt.Errorf("%w: %s was replaced each time it was opened", engine.ErrBusy, path), err)
		}
	}
}

// follow opens the file its path names now, if it is not the one open,
// and closes the old one; if the new one cannot be opened, the old one
// stays, and it is tried again at the next look. It tells said of a new
// file, and of one it cannot open once a reason, in the words of what the
// command does with the file (verb, as "copying", and past, as "copied").
// It reports whether it opened a new file.
func (w *followedFile) follow(said io.Writer, verb, past string) bool {
	if replaced, err := w.Replaced(); err != nil || !replaced {
		w.refused = ""
		return false // gone for a moment, or the same file
	}
	next, err := openFollowed(w.Path(), w.opts)
	if err != nil {
		if why := err.Error(); why != w.refused {
			w.refused = why
			fmt.Fprintf(said, "tallybloom: %s was replaced: the new file cannot be opened, so the old one is still %s: %v\n", w.Path(), past, err)
		}
		return false
	}
	old := w.Filter
	w.Filter, w.refused = next.Filter, ""
	fmt.Fprintf(said, "tallybloom: %s was replaced: %s the new file\n", w.Path(), verb)
	if err := old.Close(); err != nil {
		fmt.Fprintf(said, "tallybloom: %s: closing the old file: %v\n", w.Path(), err)
	}
	return true
}
