//go:build unix

package engine

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// crashKills defaults to 200 SIGKILLs, and 50 under the race detector,
// which sees no race between the test and its child (raceDetector).
var crashKills = flag.Int("crash.kills", map[bool]int{false: 200, true: 50}[raceDetector], "SIGKILLs in TestProcessCrashWithRealKills")

// command is one command sent to the writer child, as the parent's model
// sees it.
type command struct {
	op    byte // A, B, R, D, F
	id    uint64
	first uint64 // first key
	n     uint64 // keys (B), else 1
}

func (c command) String() string {
	switch c.op {
	case 'B':
		return fmt.Sprintf("B %d %d %d", c.id, c.first, c.n)
	case 'D':
		return fmt.Sprintf("D %d", c.id)
	case 'F':
		return "F"
	}
	return fmt.Sprintf("%c %d %d", c.op, c.id, c.first)
}

// TestProcessCrashWithRealKills runs a writer in a child process that adds,
// removes (in single calls and batches) and retires, reporting each
// acknowledged command, and kills it with SIGKILL at random moments. After
// every kill, Open must succeed without a rebuild; the sequence number tells
// how many changes of the command in flight committed; no acknowledged key
// may be missing, every count must match, and Verify must pass.
func TestProcessCrashWithRealKills(t *testing.T) {
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 3_000, ErrorRate: 0.01, Growth: 1, Seed: 9}, nil)
	require.NoError(t, err)
	seq := f.Stats().MemSeq
	stats := f.Stats()
	require.NoError(t, f.Close())

	rng := rand.New(rand.NewPCG(1, 2))
	m := &model{held: map[modelEntry]int{}}
	var held []modelEntry // entries to pick removes from; may hold stale ones
	clock, nextKey := uint64(1), uint64(0)
	recoveries, inFlight, changes := 0, 0, uint64(0)

	// Kill as often as asked and, should no kill have landed inside a
	// change yet (a loaded machine shifts the timing), go on a while longer.
	kill := 0
	for ; kill < *crashKills || (recoveries == 0 && kill < 4**crashKills); kill++ {
		c := startChild(t, "writer", path)
		require.Equal(t, "ready", <-c.replies)
		var sent []command
		removing := map[modelEntry]bool{}
		dropCutoff := uint64(0) // entries below it may be retired by a queued D
		next := func() command {
			clock++
			switch r := rng.IntN(100); {
			case r < 30 && len(held) > 0:
				i := rng.IntN(len(held))
				e := held[i]
				if m.held[e] > 0 && !removing[e] && e.id >= dropCutoff {
					removing[e] = true
					return command{op: 'R', id: e.id, first: e.key, n: 1}
				}
				fallthrough
			case r < 60:
				nextKey++
				return command{op: 'A', id: clock, first: nextKey - 1, n: 1}
			case r < 97 || len(stats.SubFilters) < 5:
				n := uint64(1 + rng.IntN(2048))
				nextKey += n
				return command{op: 'B', id: clock, first: nextKey - n, n: n}
			case r < 99:
				dropCutoff = max(dropCutoff, stats.SubFilters[len(stats.SubFilters)-3].FirstID)
				return command{op: 'D', id: dropCutoff, n: 1}
			}
			return command{op: 'F'}
		}
		// Keep a few commands queued so the child is always busy, and kill
		// it at a random moment after its first answer (past its start and
		// the sync that marks the file dirty). The kill comes from a timer,
		// not from the loop that reads answers: that loop wakes as the child
		// finishes a command, so a kill from it lands between commands more
		// often.
		var killAt <-chan time.Time
		acked := 0
		for killed := false; !killed; {
			for len(sent)-acked < 4 {
				cmd := next()
				sent = append(sent, cmd)
				c.send("%v", cmd)
			}
			select {
			case reply := <-c.replies:
				acked++
				seq = applyAck(t, m, &held, sent[acked-1], reply, seq)
				if killAt == nil {
					killAt = time.After(time.Duration(rng.IntN(10_000)) * time.Microsecond)
				}
			case <-killAt:
				killed = true
			}
		}
		c.kill()
		for reply := range c.replies { // acks already in the pipe
			acked++
			seq = applyAck(t, m, &held, sent[acked-1], reply, seq)
		}
		c.wait()

		f, err := Open(path, nil)
		require.NoError(t, err, "kill %d: open after SIGKILL", kill)
		stats = f.Stats()
		if stats.Recovered {
			recoveries++
		}
		// The sequence says how many changes of the first unacknowledged
		// command committed before the kill.
		committed := stats.MemSeq - seq
		if acked < len(sent) && committed > 0 {
			inFlight++
			applyPrefix(t, m, &held, sent[acked], committed, stats)
		} else {
			require.Zero(t, committed, "kill %d: changes past the last acknowledged command", kill)
		}
		changes += stats.MemSeq - seq
		seq = stats.MemSeq
		m.check(t, f)
		require.Empty(t, f.verify(), "kill %d", kill)
		require.NoError(t, f.Close())
	}
	require.NoError(t, Verify(path))
	t.Logf("%d kills, %d recoveries of a change in flight, %d kills inside a command; %d keys held in %d sub-filters at sequence %d",
		kill, recoveries, inFlight, len(m.held), len(stats.SubFilters), seq)
	require.Positive(t, recoveries, "some kills must land inside a change")
}

// applyAck applies an acknowledged command to the model and checks the
// sequence it reports: one per change.
func applyAck(t *testing.T, m *model, held *[]modelEntry, cmd command, reply string, seq uint64) uint64 {
	t.Helper()
	fields := strings.Fields(reply)
	require.Equal(t, "ok", fields[0], "%v: %s", cmd, reply)
	got, err := strconv.ParseUint(fields[1], 10, 64)
	require.NoError(t, err)
	switch cmd.op {
	case 'D':
		oldest, _ := strconv.ParseUint(fields[2], 10, 64)
		require.LessOrEqual(t, got-seq, uint64(1))
		dropBelow(m, oldest)
	case 'F':
		require.Equal(t, seq, got)
	default:
		require.Equal(t, seq+cmd.n, got, "%v: one sequence number per change", cmd)
		applyKeys(m, held, cmd, cmd.n)
	}
	return got
}

// applyPrefix applies the first committed changes of a command the kill
// interrupted.
func applyPrefix(t *testing.T, m *model, held *[]modelEntry, cmd command, committed uint64, stats Stats) {
	t.Helper()
	switch cmd.op {
	case 'D':
		require.Equal(t, uint64(1), committed)
		dropBelow(m, stats.SubFilters[0].FirstID)
	case 'F':
		t.Fatalf("a flush committed %d changes", committed)
	default:
		require.LessOrEqual(t, committed, cmd.n, "%v", cmd)
		applyKeys(m, held, cmd, committed)
	}
}

func applyKeys(m *model, held *[]modelEntry, cmd command, n uint64) {
	for k := cmd.first; k < cmd.first+n; k++ {
		e := modelEntry{key: k, id: cmd.id}
		if cmd.op == 'R' {
			if m.held[e]--; m.held[e] == 0 {
				delete(m.held, e)
			}
			continue
		}
		m.held[e]++
		*held = append(*held, e)
	}
}

func dropBelow(m *model, oldest uint64) {
	for e := range m.held {
		if e.id < oldest {
			delete(m.held, e)
		}
	}
}
