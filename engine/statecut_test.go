package engine

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/seqno"
)

// TestAStateCutShortOpens: a writer killed while it rewrites the state
// leaves the spare copy whole and the state half written, its first bytes
// new and the rest old. The file opens, for a reader and for a writer,
// with what the spare says; the writer's Open makes the two copies whole
// again. The state is cut after each of its bytes, as the writer marks
// the file dirty before the first change after a flush, and as a flush
// stores the clean state.
func TestAStateCutShortOpens(t *testing.T) {
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 1_000, ErrorRate: 0.01, Seed: 5}, bootOf(1))
	require.NoError(t, err)
	for i := range uint64(100) {
		require.NoError(t, f.Add(key(i), i))
	}
	stateOf := func() []byte { return bytes.Clone(f.page0[offState:][:seqno.StateSize]) }
	require.NoError(t, f.Flush())
	flushedState, flushed := stateOf(), readFile(t, path)
	require.NoError(t, f.Add(key(100), 100)) // marks the file dirty
	dirtyState, changed := stateOf(), readFile(t, path)
	require.NoError(t, f.Flush())
	cleanState := stateOf()
	require.NoError(t, f.Close())

	for _, c := range []struct {
		name     string
		file     []byte // the file as the kill left it, but for its state area
		from, to []byte // the state the cut Store replaced, and the one it stored
		added    bool   // the file holds key(100)
	}{
		{"the dirty mark", flushed, flushedState, dirtyState, false},
		{"a flush", changed, dirtyState, cleanState, true},
	} {
		for n := range seqno.StateSize + 1 {
			name := fmt.Sprintf("%s, cut after %d bytes", c.name, n)
			image := bytes.Clone(c.file)
			area := image[offState:][:seqno.StateAreaSize]
			copy(area[seqno.StateSpare:], c.to)
			copy(area, c.to[:n])
			copy(area[n:seqno.StateSize], c.from[n:])
			_, torn := seqno.DecodeState(area)
			require.NoError(t, os.WriteFile(path, image, 0o644))

			for _, readOnly := range []bool{true, false} {
				opts := bootOf(1)
				opts.ReadOnly = readOnly
				g, err := Open(path, opts)
				require.NoError(t, err, "%s, read-only %v", name, readOnly)
				assert.True(t, g.Contains(key(7)), name)
				assert.Equal(t, c.added, g.Contains(key(100)), name)
				if !readOnly && torn != nil {
					state := g.page0[offState:]
					_, err := seqno.DecodeState(state)
					require.NoError(t, err, "%s: the writer's Open mends the state", name)
					assert.Equal(t, state[:seqno.StateSize], state[seqno.StateSpare:][:seqno.StateSize], name)
				}
				require.NoError(t, g.Close())
			}
			require.NoError(t, Verify(path), name)
		}
	}
}
