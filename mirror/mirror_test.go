//go:build unix

package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
)

func key(i uint64) []byte { return binary.LittleEndian.AppendUint64([]byte("mirror-key-"), i) }

// smallParts split the counter strings, so that parts are exercised.
var smallParts = &Options{PartBytes: 4096, Backoff: 10 * time.Millisecond}

func newFilter(t *testing.T, cfg engine.Config) *engine.Filter {
	t.Helper()
	f, err := engine.Create(filepath.Join(t.TempDir(), "f.tb"), cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// shipped is a new filter of cfg with a Mirror attached to r under name,
// holding keys 1 to n, each added with its number as id and shipped; next
// is the key after them. The mirror closes with the test, before the
// filter.
func shipped(t *testing.T, ctx context.Context, r Redis, name string, cfg engine.Config, opts *Options, n uint64) (f *engine.Filter, m *Mirror, next uint64) {
	t.Helper()
	f = newFilter(t, cfg)
	m, err := Attach(f, r, name, opts)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	next = 1
	addKeys(t, f, &next, n)
	require.NoError(t, m.Flush(ctx))
	return f, m, next
}

// workload adds, removes and retires, starting from id next; it returns
// the next id.
func workload(t *testing.T, f *engine.Filter, rng *rand.Rand, n int, next uint64) uint64 {
	t.Helper()
	for range n {
		switch r := rng.IntN(100); {
		case r < 2:
			subs := f.Stats().SubFilters
			_, err := f.DropBefore(subs[len(subs)-1].FirstID)
			require.NoError(t, err)
		case r < 25:
			k := next - uint64(rng.IntN(200))
			_ = f.Remove(key(k), k)
		default:
			next++
			require.NoError(t, f.Add(key(next), next))
			if rng.IntN(10) == 0 { // the same key again: counters reach 15
				for range 20 {
					require.NoError(t, f.Add(key(next), next))
				}
			}
		}
	}
	return next
}

// requireSame checks that Redis holds exactly the file: counter bytes,
// directory, tallies and sequence.
func requireSame(t *testing.T, ctx context.Context, r Redis, name string, f *engine.Filter) {
	t.Helper()
	local, err := f.Snapshot()
	require.NoError(t, err)
	remote, err := Pull(ctx, r, name)
	require.NoError(t, err)
	requireSameSnapshot(t, local, remote)
}

// requireSameFilters checks that two filters hold the same counter bytes,
// directory, tallies, sequence and parameters.
func requireSameFilters(t *testing.T, f, g *engine.Filter) {
	t.Helper()
	local, err := f.Snapshot()
	require.NoError(t, err)
	other, err := g.Snapshot()
	require.NoError(t, err)
	requireSameSnapshot(t, local, other)
}

// requireSameSnapshot checks that two snapshots hold the same counter
// bytes, directory, tallies, sequence and parameters.
func requireSameSnapshot(t *testing.T, local, remote *engine.Snapshot) {
	t.Helper()
	require.Equal(t, local.MemSeq(), remote.MemSeq(), "sequence")
	require.Equal(t, local.SubFilters(), remote.SubFilters(), "directory and tallies")
	for i := range local.SubFilters() {
		require.Equal(t, local.Counters(i), remote.Counters(i), "counters of sub-filter %d", i)
	}
	require.Equal(t, local.Config(), remote.Config())
}

func dial(t *testing.T, url string, cluster bool) Redis {
	t.Helper()
	var r Redis
	var err error
	if cluster {
		r, err = DialCluster(url)
	} else {
		r, err = Dial(url)
	}
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// TestMirrorHoldsExactlyTheFile: after a random workload of adds, removes
// and retirements with the mirror attached, Redis holds exactly the file's
// counter bytes, directory and sequence, on one server and on a cluster.
func TestMirrorHoldsExactlyTheFile(t *testing.T) {
	t.Parallel()
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "standalone", true: "cluster"}[cluster], func(t *testing.T) {
			t.Parallel()
			url := ""
			if cluster {
				url = redistest.StartCluster(t).URL()
			} else {
				url = redistest.StartServer(t).URL()
			}
			r := dial(t, url, cluster)
			ctx := context.Background()
			for _, c := range []struct {
				cfg  engine.Config
				flat bool
			}{
				{engine.Config{Capacity: 2000, ErrorRate: 0.01, Growth: 1, Seed: 7}, false},
				{engine.Config{Capacity: 30, ErrorRate: 0.01, Growth: 1, Seed: 7}, true},
			} {
				f := newFilter(t, c.cfg)
				next := workload(t, f, rand.New(rand.NewPCG(1, 1)), 500, 0)
				require.Equal(t, c.flat, f.Stats().SubFilters[0].Flat, "the geometry under test")
				m, err := Attach(f, r, "spam", smallParts)
				require.NoError(t, err)
				next = workload(t, f, rand.New(rand.NewPCG(2, 2)), 8000, next)
				require.NoError(t, m.Flush(ctx))
				requireSame(t, ctx, r, "spam", f)
				s := m.Stats()
				assert.Equal(t, f.Stats().MemSeq, s.Acked)
				assert.Zero(t, s.QueueDepth)
				assert.Empty(t, s.LastError)
				require.NoError(t, m.Close())
				_ = next
			}
		})
	}
}

// TestCheckerAgrees: a Checker with no local file agrees with the filter on
// 100 000 members and 100 000 non-members.
func TestCheckerAgrees(t *testing.T) {
	t.Parallel()
	eachRedis(t, testCheckerAgrees)
}

// eachRedis runs test against one server and against a cluster, the two at
// once (t.Parallel), as the tests that use it run beside the package's other
// parallel tests: they wait on Redis far more than they compute.
func eachRedis(t *testing.T, test func(*testing.T, Redis)) {
	t.Run("standalone", func(t *testing.T) {
		t.Parallel()
		test(t, dial(t, redistest.StartServer(t).URL(), false))
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		test(t, dial(t, redistest.StartCluster(t).URL(), true))
	})
}

func testCheckerAgrees(t *testing.T, r Redis) {
	ctx := context.Background()
	f := newFilter(t, engine.Config{Capacity: 30_000, ErrorRate: 0.01, Growth: 1, Seed: 3})
	m, err := Attach(f, r, "agree", nil)
	require.NoError(t, err)
	defer m.Close()
	keys := make([][]byte, 0, 1000)
	for i := range uint64(100_000) {
		keys = append(keys, key(i))
		if len(keys) == cap(keys) {
			ids := make([]uint64, len(keys))
			for j := range ids {
				ids[j] = i
			}
			require.NoError(t, f.AddBatch(keys, ids))
			keys = keys[:0]
		}
	}
	require.NoError(t, m.Flush(ctx))
	c, err := NewChecker(ctx, r, "agree")
	require.NoError(t, err)
	assert.Equal(t, f.Stats().MemSeq, c.Seq())
	var out []bool
	mismatches, present := 0, 0
	for start := uint64(0); start < 200_000; start += 1000 {
		batch := make([][]byte, 0, 1000)
		for i := start; i < start+1000; i++ {
			batch = append(batch, key(i))
		}
		out, err = c.ContainsBatch(ctx, batch, out)
		require.NoError(t, err)
		for j, k := range batch {
			if out[j] != f.Contains(k) {
				mismatches++
			}
			if out[j] {
				present++
			}
		}
	}
	assert.Zero(t, mismatches)
	assert.GreaterOrEqual(t, present, 100_000, "every member")
	one, err := c.Contains(ctx, key(5))
	require.NoError(t, err)
	assert.True(t, one)
}

// TestCheckerFollowsTheSubFilters: a checker made before the chain grows
// finds the keys of every sub-filter opened since, and one made before the
// oldest sub-filters are retired and their levels opened again answers as
// the filter does, never from a retired sub-filter's shape.
func TestCheckerFollowsTheSubFilters(t *testing.T) {
	t.Parallel()
	eachRedis(t, testCheckerFollowsTheSubFilters)
}

func testCheckerFollowsTheSubFilters(t *testing.T, r Redis) {
	ctx := context.Background()
	f, m, next := shipped(t, ctx, r, "grows", engine.Config{Capacity: 1000, ErrorRate: 0.01, Growth: 1, Seed: 11}, nil, 500)
	c, err := NewChecker(ctx, r, "grows")
	require.NoError(t, err)
	require.Len(t, f.Stats().SubFilters, 1)

	// agrees checks keys 1 to 2*next against the filter: members and as
	// many keys never added.
	agrees := func(when string) {
		t.Helper()
		var batch [][]byte
		for i := uint64(1); i < 2*next; i++ {
			batch = append(batch, key(i))
		}
		out, err := c.ContainsBatch(ctx, batch, nil)
		require.NoError(t, err)
		for i, k := range batch {
			require.Equal(t, f.Contains(k), out[i], "%s: key %d", when, i+1)
		}
	}
	addKeys(t, f, &next, 3500)
	require.NoError(t, m.Flush(ctx))
	require.Len(t, f.Stats().SubFilters, 4)
	agrees("after the chain grew")

	retired := f.Stats().SubFilters[0].Level
	dropOldest(t, f)
	dropOldest(t, f)
	addKeys(t, f, &next, 1500)
	require.NoError(t, m.Flush(ctx))
	levels := []int{}
	for _, sub := range f.Stats().SubFilters {
		levels = append(levels, sub.Level)
	}
	require.Contains(t, levels, retired, "a retired level opened again")
	agrees("after sub-filters were retired and their levels opened again")
}

// push is Push for tests that need only its error.
func push(ctx context.Context, f *engine.Filter, r Redis, name string, opts *Options) error {
	_, err := Push(ctx, f, r, name, opts)
	return err
}

// TestPushReturnsTheSequenceItCopied: while a writer changes the filter,
// Push says the sequence of the copy it made live.
func TestPushReturnsTheSequenceItCopied(t *testing.T) {
	t.Parallel()
	eachRedis(t, testPushReturnsTheSequenceItCopied)
}

func testPushReturnsTheSequenceItCopied(t *testing.T, r Redis) {
	ctx := context.Background()
	f := newFilter(t, engine.Config{Capacity: 200_000, ErrorRate: 0.01, Seed: 6})
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		for i := uint64(0); ; i++ {
			select {
			case <-stop:
				wrote <- nil
				return
			default:
			}
			// 20 000 keys added, then removed, then added again: the
			// sequence moves at the writer's full speed while the filter
			// stays one sub-filter, where keys never seen before grew it
			// to six (129 MB) and each Push to seconds.
			id, change := i%20_000, f.Add
			if i/20_000%2 == 1 {
				change = f.Remove
			}
			if err := change(key(id), id); err != nil {
				wrote <- err
				return
			}
		}
	}()
	var last uint64
	for range 5 {
		before := f.Stats().MemSeq
		seq, err := Push(ctx, f, r, "moving-seq", smallParts)
		require.NoError(t, err)
		c, err := NewChecker(ctx, r, "moving-seq")
		require.NoError(t, err)
		assert.Equal(t, c.Seq(), seq, "the sequence Redis holds")
		assert.GreaterOrEqual(t, seq, before)
		last = seq
	}
	close(stop)
	require.NoError(t, <-wrote)
	assert.Greater(t, last, uint64(1000), "copies taken while the writer added")
	assert.Len(t, f.Stats().SubFilters, 1)
}

// TestRestore: a file restored from Redis has byte-identical counters and
// answers the same; Push refills Redis from a file.
func TestRestore(t *testing.T) {
	t.Parallel()
	eachRedis(t, testRestore)
}

func testRestore(t *testing.T, r Redis) {
	ctx := context.Background()
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Growth: 1, Seed: 5})
	workload(t, f, rand.New(rand.NewPCG(3, 3)), 6000, 0)
	require.NoError(t, push(ctx, f, r, "restore", smallParts))

	g, err := Restore(ctx, r, "restore", filepath.Join(t.TempDir(), "restored.tb"), nil)
	require.NoError(t, err)
	defer g.Close()
	requireSameFilters(t, f, g)
	for i := range uint64(20_000) {
		require.Equal(t, f.Contains(key(i)), g.Contains(key(i)))
	}
	_, err = Restore(ctx, r, "restore", g.Path(), nil)
	assert.ErrorIs(t, err, engine.ErrExists)
	assert.Positive(t, g.Stats().PresenceBytes, "presence bits rebuilt from the counters")
	require.NoError(t, g.Close())
	require.NoError(t, engine.Verify(g.Path()))

	// A filter of counters only is restored as one.
	lean := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 5, CountersOnly: true})
	workload(t, lean, rand.New(rand.NewPCG(3, 3)), 500, 0)
	require.NoError(t, push(ctx, lean, r, "lean", smallParts))
	h, err := Restore(ctx, r, "lean", filepath.Join(t.TempDir(), "lean.tb"), nil)
	require.NoError(t, err)
	defer h.Close()
	assert.True(t, h.Config().CountersOnly)
	assert.Zero(t, h.Stats().PresenceBytes)

	// RestoreAs chooses the layout: the lean copy gains presence bits, the
	// other loses them, and both answer as their filters do.
	for _, c := range []struct {
		name         string
		from         *engine.Filter
		countersOnly bool
	}{{"lean", lean, false}, {"restore", f, true}} {
		g, err := RestoreAs(ctx, r, c.name, filepath.Join(t.TempDir(), c.name+"-as.tb"), c.countersOnly, nil)
		require.NoError(t, err)
		defer g.Close()
		assert.Equal(t, c.countersOnly, g.Config().CountersOnly, c.name)
		assert.Equal(t, c.countersOnly, g.Stats().PresenceBytes == 0, c.name)
		for i := range uint64(5_000) {
			require.Equal(t, c.from.Contains(key(i)), g.Contains(key(i)), "%s: key %d", c.name, i)
		}
		require.NoError(t, g.Close())
		require.NoError(t, engine.Verify(g.Path()))
	}
}

// A user, a password and TLS work, and the credentials appear in no error.
func TestUserPasswordAndTLS(t *testing.T) {
	s := redistest.StartTLSServer(t, "--user", "default", "off", "--user", "tally", "on", ">tally-secret", "~*", "&*", "+@all")
	url := strings.Replace(s.URL(), "redis://", "rediss://tally:tally-secret@", 1) + "?skip_verify=true"
	r := dial(t, url, false)
	ctx := context.Background()
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 4})
	for i := range uint64(100) {
		require.NoError(t, f.Add(key(i), i))
	}
	require.NoError(t, push(ctx, f, r, "tls", nil))
	c, err := NewChecker(ctx, r, "tls")
	require.NoError(t, err)
	present, err := c.Contains(ctx, key(7))
	require.NoError(t, err)
	assert.True(t, present)

	wrong := dial(t, strings.Replace(url, "tally-secret", "wrong-secret", 1), false)
	err = push(ctx, f, wrong, "tls", nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "wrong-secret")
	_, err = Dial("rediss://tally:tally-secret@[bad")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "tally-secret", "a bad URL is reported without its password")
	assert.Equal(t, "rediss://tally:xxxxx@127.0.0.1:6379", Redact("rediss://tally:tally-secret@127.0.0.1:6379"))
	assert.Equal(t, "xxxxx@127.0.0.1:6379", Redact("tally:tally-secret@127.0.0.1:6379"), "without a scheme")
	assert.Equal(t, "xxxxx@[bad", Redact("rediss://tally:tally-secret@[bad"), "unparsable")
}

// A URL that cannot be dialled is refused with ErrInvalidURL, before any
// connection, and one without a scheme is told the form to write.
func TestBadURLsSayWhy(t *testing.T) {
	for _, c := range []struct {
		url       string
		wantsForm bool // the error shows the redis:// form
	}{
		{"127.0.0.1:6379", true},
		{"localhost:6379", true},
		{"tally:tally-secret@localhost:6379", true},
		{"localhost", true},
		{"http://localhost:6379", false},
		{"redis://localhost:6379?dial_timeout=forever", false},
		{"rediss://tally:tally-secret@[bad", false},
	} {
		for name, dial := range map[string]func(string) (Redis, error){"Dial": Dial, "DialCluster": DialCluster} {
			_, err := dial(c.url)
			require.ErrorIs(t, err, ErrInvalidURL, "%s(%q)", name, c.url)
			assert.NotContains(t, err.Error(), "tally-secret", "%s(%q)", name, c.url)
			if c.wantsForm {
				assert.Contains(t, err.Error(), "redis://host:port", "%s(%q)", name, c.url)
			}
		}
	}
}

// A nil Redis or a nil filter is refused with ErrInvalidInput by every
// call that takes one, before it runs anything: no goroutine is started,
// no file is made.
func TestNilArgumentsAreRefused(t *testing.T) {
	ctx := context.Background()
	f, err := engine.Create(filepath.Join(t.TempDir(), "f.tb"), engine.Config{Capacity: 100, ErrorRate: 0.01}, nil)
	require.NoError(t, err)
	defer f.Close()
	r := dial(t, redistest.StartServer(t).URL(), false)
	dir := t.TempDir()

	_, errAttach := Attach(f, nil, "f", nil)
	_, errPush := Push(ctx, f, nil, "f", nil)
	_, errPusher := NewPusher(nil, "f", nil)
	_, errChecker := NewChecker(ctx, nil, "f")
	_, errPull := Pull(ctx, nil, "f")
	_, errRestore := Restore(ctx, nil, "f", filepath.Join(dir, "g.tb"), nil)
	_, errRestoreAs := RestoreAs(ctx, nil, "f", filepath.Join(dir, "g.tb"), true, nil)
	_, errDescribe := Describe(ctx, nil, "f")
	for name, err := range map[string]error{"Attach": errAttach, "Push": errPush, "NewPusher": errPusher, "NewChecker": errChecker,
		"Pull": errPull, "Restore": errRestore, "RestoreAs": errRestoreAs, "Describe": errDescribe} {
		require.ErrorIs(t, err, ErrInvalidInput, name)
		assert.ErrorContains(t, err, "a nil Redis", name)
	}

	_, errAttach = Attach(nil, r, "f", nil)
	_, errPush = Push(ctx, nil, r, "f", nil)
	p, err := NewPusher(r, "f", nil)
	require.NoError(t, err)
	_, errPusher = p.Push(ctx, nil)
	require.NoError(t, p.Close())
	for name, err := range map[string]error{"Attach": errAttach, "Push": errPush, "Pusher.Push": errPusher} {
		require.ErrorIs(t, err, ErrInvalidInput, name)
		assert.ErrorContains(t, err, "a nil filter", name)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
	// Nothing was pushed, and the name was given up: a push now succeeds.
	_, err = Describe(ctx, r, "f")
	require.ErrorIs(t, err, ErrNotMirrored)
	_, err = Push(ctx, f, r, "f", nil)
	require.NoError(t, err)
}

// Two mirrors of one filter under one name in one Redis would replace each
// other's copies: the second waits for the name, and says that this very
// process holds it, while the first ships every change.
func TestTwoMirrorsUnderOneName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := dial(t, redistest.StartServer(t).URL(), false)
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 3})
	first, err := Attach(f, r, "f", nil)
	require.NoError(t, err)
	defer first.Close()
	require.NoError(t, first.Flush(ctx))
	second, err := Attach(f, r, "f", nil)
	require.NoError(t, err)
	defer second.Close()

	require.NoError(t, f.AddString("after", 2))
	require.NoError(t, first.Flush(ctx))
	requireSame(t, ctx, r, "f", f)
	waited, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err = second.Flush(waited)
	require.ErrorIs(t, err, ErrNameTaken)
	assert.ErrorContains(t, err, "this process ("+thisProcess()+") holds it, through another Mirror or Push of that name")
	assert.Zero(t, second.Stats().Shipped, "the second wrote nothing")
}

// One filter mirrored into two Redis deployments: each copy follows every
// change, and closing one mirror leaves the other following.
func TestTwoMirrorsOfOneFilter(t *testing.T) {
	ctx := context.Background()
	here := dial(t, redistest.StartServer(t).URL(), false)
	there := dial(t, redistest.StartServer(t).URL(), false)
	f := newFilter(t, engine.Config{Capacity: 1000, ErrorRate: 0.01, Seed: 3})
	require.NoError(t, f.AddString("before", 1))
	first, err := Attach(f, here, "f", nil)
	require.NoError(t, err)
	second, err := Attach(f, there, "f", nil)
	require.NoError(t, err)

	for i := range uint64(300) {
		require.NoError(t, f.Add(key(i), 2+i))
	}
	require.NoError(t, f.Remove(key(7), 9))
	require.NoError(t, first.Flush(ctx))
	require.NoError(t, second.Flush(ctx))
	requireSame(t, ctx, here, "f", f)
	requireSame(t, ctx, there, "f", f)

	require.NoError(t, first.Close())
	require.NoError(t, f.AddString("after", 400))
	require.NoError(t, second.Flush(ctx))
	requireSame(t, ctx, there, "f", f)
	info, err := Describe(ctx, here, "f")
	require.NoError(t, err)
	assert.Equal(t, f.Stats().MemSeq-1, info.Seq, "the closed mirror's copy stops where it closed")
	require.NoError(t, second.Close())
}

// TestRedisLayoutIsPinned: a copy of a filter made from fixed parameters
// and keys, pushed into an empty Redis, hashes to a known value: its keys,
// their types and their contents, but the claim on the name, whose token
// is random. Copies in Redis outlive the processes that wrote them, and
// readers on other machines may run the release before or after: a change
// here is a change of Format, and of the meta hash's format field.
func TestRedisLayoutIsPinned(t *testing.T) {
	s := redistest.StartServer(t)
	raw := redistest.Client(t, s)
	r := dial(t, s.URL(), false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := newFilter(t, engine.Config{Capacity: 500, ErrorRate: 0.01, Seed: 0x7a11b100})
	for i := range uint64(1500) {
		require.NoError(t, f.Add(key(i), i))
	}
	require.NoError(t, f.Remove(key(7), 7))
	require.Len(t, f.Stats().SubFilters, 2)
	require.NoError(t, push(ctx, f, r, "pinned", smallParts))

	names, err := raw.Keys(ctx, "{pinned}:*").Result()
	require.NoError(t, err)
	slices.Sort(names)
	sum, owner := sha256.New(), keys{"pinned"}.owner()
	for _, name := range names {
		if name == owner {
			continue
		}
		kind := raw.Type(ctx, name).Val()
		fmt.Fprintf(sum, "%s %s\n", name, kind)
		switch kind {
		case "string":
			fmt.Fprintf(sum, "%q\n", raw.Get(ctx, name).Val())
		case "hash":
			fields := raw.HGetAll(ctx, name).Val()
			for _, field := range slices.Sorted(maps.Keys(fields)) {
				fmt.Fprintf(sum, "%s=%q\n", field, fields[field])
			}
		default:
			t.Fatalf("%s is a %s", name, kind)
		}
	}
	assert.Equal(t, "94066e9aed022ffea3164e2907915b48f649b55d07280a520dbd56cb8212b04b", hex.EncodeToString(sum.Sum(nil)), "keys %q", names)
}
