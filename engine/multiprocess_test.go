//go:build unix

package engine

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One writer, a second writer refused, and read-only processes that follow
// the writer's adds, new sub-filters and retirements without reopening.
func TestManyProcesses(t *testing.T) {
	w := newTestFilter(t, Config{Capacity: 200, ErrorRate: 0.01, Growth: 1, Seed: 6})
	require.NoError(t, w.Add(key(0), 0))

	second := startChild(t, "writer", w.Path())
	reply := <-second.replies
	assert.True(t, strings.HasPrefix(reply, "error"), reply)
	assert.Contains(t, reply, ErrLocked.Error())
	if runtime.GOOS == "linux" { // where the system says who holds a lock
		assert.Contains(t, reply, fmt.Sprintf("(process %d, ", os.Getpid()), "the writer is named")
	}
	second.stop()

	readers := []*child{startChild(t, "reader", w.Path()), startChild(t, "reader", w.Path())}
	for _, r := range readers {
		require.Equal(t, "ready", <-r.replies)
		defer r.stop()
	}
	ask := func(format string, args ...any) []string {
		var replies []string
		for _, r := range readers {
			replies = append(replies, r.ask(t, format, args...))
		}
		return replies
	}

	assert.Equal(t, []string{"1", "1"}, ask("C 0"))
	assert.Equal(t, []string{"0", "0"}, ask("C 1"))
	require.NoError(t, w.Add(key(1), 1))
	assert.Equal(t, []string{"1", "1"}, ask("C 1"), "a new add is seen")

	next := fillChain(t, w, 4, 2)
	subs := w.Stats().SubFilters
	want := fmt.Sprintf("%d %d", len(subs), subs[0].FirstID)
	assert.Equal(t, []string{want, want}, ask("S"), "new sub-filters are seen")
	assert.Equal(t, []string{"1", "1"}, ask("C %d", next-1))

	_, err := w.DropBefore(subs[2].FirstID)
	require.NoError(t, err)
	want = fmt.Sprintf("2 %d", subs[2].FirstID)
	assert.Equal(t, []string{want, want}, ask("S"), "retirements are seen")
	assert.Equal(t, []string{"0", "0"}, ask("C 0"), "retired keys are gone")
	assert.Equal(t, []string{"1", "1"}, ask("C %d", next-1))
}
