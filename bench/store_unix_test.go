//go:build unix

package bench

import (
	"fmt"
	"testing"

	"github.com/tallybloom/tallybloom/internal/faults"
)

// After the pages of a filter's file are written back, as the kernel does
// on its own to a file dirty for 30 s, adds into them fault; readyToStore,
// which writes back and then warms, leaves a timing that follows none, and
// warms only before a benchmark's first run.
func TestReadyToStoreLeavesThePagesDirty(t *testing.T) {
	subject, err := NewSubject(Tallybloom, 200_000, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer subject.(*tally).Close()
	keys := Keys(50_000, 1)
	addAll := func() int64 { return addsFault(t, subject, keys) }
	addAll() // every page stored into

	settle()
	if n := addAll(); n < 100 {
		t.Skipf("adds into a filter of 2.3 MB just written back faulted %d times: this file system (tmpfs?) keeps written pages writable, and the test cannot see what it checks", n)
	}

	settle()
	warmed, name := 0, fmt.Sprintf("%s/%p", t.Name(), subject)
	readyToStore(name, func() { warmed++; addAll() })
	if n := addAll(); n > 20 {
		t.Fatalf("adds after readyToStore faulted %d times", n)
	}
	readyToStore(name, func() { warmed++ })
	if warmed != 1 {
		t.Fatalf("readyToStore warmed %d times for one name", warmed)
	}
}

// The new filter that BenchmarkAdd times at a fresh size has its pages
// readied before the timing: its first adds take no fault, where those of
// a new filter fault once or twice a page.
func TestAFreshAddSubjectStoresWithoutFaults(t *testing.T) {
	keys := Keys(50_000, 1)
	fresh := size{label: t.Name(), capacity: 200_000, fresh: true, probes: len(keys)}
	cold, ready := int64(-1), int64(-1)
	counted := true
	testing.Benchmark(func(b *testing.B) {
		if ready >= 0 {
			return // the runs after the first, which Benchmark asks for
		}
		untouched := newSubject(b, Tallybloom, fresh.capacity)
		defer untouched.(*tally).Close()
		var ok1, ok2 bool
		cold, ok1 = countFaults(untouched, keys)
		ready, ok2 = countFaults(addSubject(b, "add", Tallybloom, fresh, keys), keys)
		counted = ok1 && ok2
	})
	if !counted {
		t.Skip("page faults are not counted here (this system, or the race detector)")
	}
	if cold < 100 {
		t.Skipf("adds into a new filter of 2.3 MB faulted %d times: nothing for the check to see here", cold)
	}
	if ready > 20 {
		t.Fatalf("adds into the fresh filter BenchmarkAdd times faulted %d times (%d into a new one)", ready, cold)
	}
}

// addsFault adds keys to subject and counts the page faults the adds take.
func addsFault(t *testing.T, subject Subject, keys [][]byte) int64 {
	t.Helper()
	n, ok := countFaults(subject, keys)
	if !ok {
		t.Skip("page faults are not counted here (this system, or the race detector)")
	}
	return n
}

// countFaults is addsFault for any goroutine: whether the system counts
// faults is its second result.
func countFaults(subject Subject, keys [][]byte) (int64, bool) {
	c := faults.Start()
	for _, k := range keys {
		subject.Add(k)
	}
	return c.Since()
}
