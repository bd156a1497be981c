package engine

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMachineCrashImages builds the disk images a machine crash could leave:
// the file as of the last Flush, with any subset of the pages changed since
// replaced by their newer content, opened on another boot. Page 0 is
// constrained by the protocol: before the first change after a flush, the
// dirty mark is synced, so page 0 on disk is the flushed one only if no
// other page changed, and otherwise a dirty-marked one (the first or the
// latest). Every image with a change must open as ErrUnclean carrying the
// durable sequence; the image with none must open clean, with no false
// negative.
func TestMachineCrashImages(t *testing.T) {
	path := tempPath(t)
	f, err := Create(path, Config{Capacity: 400, ErrorRate: 0.01, Growth: 1, Seed: 12}, bootOf(1))
	require.NoError(t, err)
	for i := range uint64(1000) {
		require.NoError(t, f.Add(key(i), i))
	}
	require.NoError(t, f.Flush())
	durable := f.Stats().DiskSeq
	flushed := readFile(t, path)

	// The first change after the flush marks the file dirty.
	require.NoError(t, f.Remove(key(999), 999))
	dirtyMarked := readFile(t, path)
	// Then removes of keys held at the flush, adds, new sub-filters and a
	// retirement.
	for i := uint64(0); i < 1000; i += 7 {
		require.NoError(t, f.Remove(key(i), i))
	}
	for i := uint64(1000); i < 2500; i++ {
		require.NoError(t, f.Add(key(i), i))
	}
	_, err = f.DropBefore(800)
	require.NoError(t, err)
	latest := readFile(t, path)
	abandon(t, f)

	pages := (len(latest) + PageSize - 1) / PageSize
	var changed []int // pages other than page 0 that differ
	for p := 1; p < pages; p++ {
		if !bytes.Equal(pageOf(flushed, p), pageOf(latest, p)) {
			changed = append(changed, p)
		}
	}
	require.Greater(t, len(changed), 10)

	open := func(image []byte) (*Filter, error) {
		imagePath := tempPath(t)
		require.NoError(t, os.WriteFile(imagePath, image, 0o644))
		return Open(imagePath, bootOf(2))
	}
	build := func(newer []int, page0 []byte, length int) []byte {
		image := make([]byte, length)
		copy(image, flushed)
		copy(image, page0[:PageSize])
		for _, p := range newer {
			if start := p * PageSize; start < length {
				copy(image[start:], pageOf(latest, p))
			}
		}
		return image
	}

	// Nothing reached the disk after the flush: clean, at the durable
	// sequence, every key of the flush present.
	g, err := open(flushed)
	require.NoError(t, err)
	assert.Equal(t, durable, g.Stats().MemSeq)
	for i := range uint64(1000) {
		require.True(t, g.Contains(key(i)), "false negative for key %d", i)
	}
	assert.Empty(t, g.verify())
	require.NoError(t, g.Close())

	rng := rand.New(rand.NewPCG(3, 4))
	images := 0
	check := func(newer []int) {
		for _, page0 := range [][]byte{dirtyMarked, latest} {
			for _, length := range []int{len(flushed), len(latest)} {
				images++
				g, err := open(build(newer, page0, length))
				if err == nil {
					g.Close()
				}
				require.ErrorIs(t, err, ErrUnclean, "pages %v", newer)
				var unclean *UncleanError
				require.ErrorAs(t, err, &unclean)
				require.Equal(t, durable, unclean.DurableSeq)
			}
		}
	}
	check(nil) // only the dirty mark reached the disk
	check(changed)
	for _, p := range changed {
		check([]int{p})
	}
	for range 100 {
		var subset []int
		for _, p := range changed {
			if rng.IntN(2) == 0 {
				subset = append(subset, p)
			}
		}
		check(subset)
	}
	t.Logf("%d pages changed after the flush; %d images, every one refused as unclean with durable sequence %d", len(changed), images, durable)
}

func pageOf(b []byte, p int) []byte {
	start := p * PageSize
	if start >= len(b) {
		return make([]byte, PageSize)
	}
	return b[start:min(start+PageSize, len(b))]
}
