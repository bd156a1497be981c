//go:build invariants

package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/counting"
)

// Every operation hashes its key once, however many sub-filters it visits.
func TestKeyIsHashedOncePerOperation(t *testing.T) {
	f := newTestFilter(t, Config{Capacity: 20, ErrorRate: 0.01, Growth: 1})
	next := fillChain(t, f, 8, 0)
	require.GreaterOrEqual(t, len(f.Stats().SubFilters), 8)

	once := func(name string, op func()) {
		before := counting.HashesComputed()
		op()
		assert.Equal(t, uint64(1), counting.HashesComputed()-before, name)
	}
	once("Contains of a member", func() { f.Contains(key(0)) })
	once("Contains of a non-member", func() { f.Contains(key(1 << 50)) })
	once("Add", func() { require.NoError(t, f.Add(key(next), next)) })
	once("Remove", func() { require.NoError(t, f.Remove(key(next), next)) })
	once("TestAndAdd", func() { _, _ = f.TestAndAdd(key(1<<51), next) })
	once("ContainsString", func() { f.ContainsString("x") })

	before := counting.HashesComputed()
	f.ContainsBatch(keysFrom(0, 100), nil)
	assert.Equal(t, uint64(100), counting.HashesComputed()-before, "ContainsBatch")

	keys, ids := keysFrom(1<<52, 1<<52+100), make([]uint64, 100)
	for i := range ids {
		ids[i] = next + uint64(i)
	}
	before = counting.HashesComputed()
	require.NoError(t, f.AddBatch(keys, ids))
	assert.Equal(t, uint64(100), counting.HashesComputed()-before, "AddBatch")
}
