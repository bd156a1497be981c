//go:build unix

package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
)

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
