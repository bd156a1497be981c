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
	addAll := func() int64 {
		c := faults.Start()
		for _, k := range keys {
			subject.Add(k)
		}
		n, ok := c.Since()
		if !ok {
			t.Skip("this system does not count page faults")
		}
		return n
	}
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
