//go:build unix

package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/internal/flock"
	"github.com/tallybloom/tallybloom/mmapfile"
)

// A filter file appears at its path only whole: Create and Import build it
// under a name of their own, and what a killed creator left is removed by
// the next creation of that path, unless its creator still runs.
func TestCreatedFilesAppearWhole(t *testing.T) {
	src := newTestFilter(t, Config{Capacity: 500, ErrorRate: 0.01, Growth: 1, Seed: 6})
	fillChain(t, src, 2, 0)
	var export bytes.Buffer
	require.NoError(t, src.Export(&export))

	dir := t.TempDir()
	path := filepath.Join(dir, "f.tb")
	_, err := Import(path, bytes.NewReader(export.Bytes()[:export.Len()/2]), nil)
	require.ErrorIs(t, err, ErrCorrupt, "an export cut short")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a failed import leaves nothing")

	abandoned := buildingPrefix(path) + "killed"
	require.NoError(t, os.WriteFile(abandoned, []byte("half a filter"), 0o644))
	busyName := buildingPrefix(path) + "running"
	busy, err := mmapfile.Open(busyName, os.O_RDWR|os.O_CREATE, 0o644, nil)
	require.NoError(t, err)
	require.NoError(t, busy.Lock())
	defer busy.Close()

	f, err := Import(path, bytes.NewReader(export.Bytes()), nil)
	require.NoError(t, err)
	assert.Equal(t, path, f.Path())
	assert.Equal(t, src.Stats().SubFilters, f.Stats().SubFilters)
	require.NoError(t, f.Close())
	var names []string
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{".f.tb.creating-running", "f.tb"}, names, "the abandoned file is gone, the running one stays")
	require.NoError(t, Verify(path))

	_, err = Create(path, Config{Capacity: 10, ErrorRate: 0.1}, nil)
	require.ErrorIs(t, err, ErrExists)
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "nothing more beside it")
}

// An empty path is refused before anything is built: the file would be
// made in the working directory, whole, and only its rename would fail.
func TestCreateRefusesAnEmptyPath(t *testing.T) {
	src := newTestFilter(t, Config{Capacity: 500, ErrorRate: 0.01, Seed: 6})
	var export bytes.Buffer
	require.NoError(t, src.Export(&export))
	t.Chdir(t.TempDir())

	_, err := Create("", Config{Capacity: 10, ErrorRate: 0.1}, nil)
	assert.ErrorIs(t, err, ErrInvalidInput)
	assert.ErrorContains(t, err, "empty path")
	read := &countingReader{r: bytes.NewReader(export.Bytes())}
	_, err = Import("", read, nil)
	assert.ErrorIs(t, err, ErrInvalidInput)
	assert.LessOrEqual(t, read.n, exportHeader+exportSub*len(src.Stats().SubFilters), "no counters read")
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing made in the working directory")
}

// countingReader counts the bytes read through it: how far a call got
// into a stream before it gave up.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// takingOpen opens files as os.OpenFile does, and after making each of the
// first times files beside path, removes it as another process's Create of
// path starting in that instant would (flock.RemoveUnlocked): before its
// maker has locked it. It counts the files taken.
func takingOpen(path string, times int, taken *int) mmapfile.OpenFunc {
	return func(name string, flag int, perm fs.FileMode) (*os.File, error) {
		file, err := os.OpenFile(name, flag, perm)
		if err == nil && strings.HasPrefix(name, buildingPrefix(path)) && *taken < times {
			*taken++
			flock.RemoveUnlocked(buildingPrefix(path))
		}
		return file, err
	}
}

// A file being built whose name another creation of the same path took in
// the instant before its lock is given up for another, and the filter
// appears at path whole all the same.
func TestACreateWhoseFileWasTakenInItsFirstInstantMakesAnother(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.tb")
	taken := 0
	f, err := Create(path, Config{Capacity: 1000, ErrorRate: 0.01, Seed: 3}, &Options{OpenFile: takingOpen(path, 2, &taken)})
	require.NoError(t, err)
	assert.Equal(t, 2, taken)
	require.NoError(t, f.Add([]byte("k"), 1))
	require.NoError(t, f.Close())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing beside it")
	g, err := Open(path, nil)
	require.NoError(t, err)
	defer g.Close()
	assert.True(t, g.Contains([]byte("k")))

	other := filepath.Join(dir, "g.tb")
	taken = 0
	_, err = Create(other, Config{Capacity: 1000, ErrorRate: 0.01}, &Options{OpenFile: takingOpen(other, flock.ClaimAttempts, &taken)})
	require.ErrorIs(t, err, ErrLocked, "every file it made was taken")
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "and it left nothing")
}

// FootprintOf gives what Create then makes, for a growing chain, a fixed
// filter, counters only and large pages, and refuses what Create refuses,
// without making anything.
func TestFootprintOfIsWhatCreateMakes(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		opts *Options
	}{
		{"growing", Config{Capacity: 100_000, ErrorRate: 0.01}, nil},
		{"fixed", Config{Capacity: 100_000, ErrorRate: 0.01, Fixed: true}, nil},
		{"counters only", Config{Capacity: 3_000, ErrorRate: 0.001, CountersOnly: true, Growth: 1}, nil},
		{"large pages", Config{Capacity: 1_000_000, ErrorRate: 0.01, Tightening: 0.5}, &Options{LargePages: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := FootprintOf(c.cfg)
			require.NoError(t, err)
			path := filepath.Join(t.TempDir(), "f.tb")
			f, err := Create(path, c.cfg, c.opts)
			require.NoError(t, err)
			defer f.Close()
			info, err := os.Stat(path)
			require.NoError(t, err)
			s := f.Stats()
			first := s.SubFilters[0]
			assert.Equal(t, Footprint{
				FileBytes: uint64(info.Size()), SubFilters: 1, Capacity: first.Capacity, ErrorRate: first.ErrorRate,
				CounterBytes: s.CounterBytes, PresenceBytes: s.PresenceBytes,
			}, want)
		})
	}

	// 2 billion keys: a file of 35 GiB, sized without room for it.
	big, err := FootprintOf(Config{Capacity: 2_000_000_000, ErrorRate: 0.001})
	require.NoError(t, err)
	assert.InDelta(t, 0.0001, big.ErrorRate, 1e-12, "a tenth of the chain's rate")
	assert.Greater(t, big.FileBytes, big.CounterBytes+big.PresenceBytes)
	assert.Equal(t, big.CounterBytes/4, big.PresenceBytes)

	for _, cfg := range []Config{
		{Capacity: 0, ErrorRate: 0.01},
		{Capacity: 10, ErrorRate: 1.5},
		{Capacity: 1 << 62, ErrorRate: 0.01},
	} {
		path := filepath.Join(t.TempDir(), "f.tb")
		_, createErr := Create(path, cfg, nil)
		_, err := FootprintOf(cfg)
		require.ErrorIs(t, err, ErrInvalidConfig)
		assert.Equal(t, createErr.Error(), err.Error(), "the error Create gives")
		assert.NoFileExists(t, path)
	}
}

// FootprintHolding gives what a file holds after that many adds with
// rising ids: as many sub-filters as the chain opened, and the file's size
// on disk, for a chain that doubles, one of equal sub-filters of counters
// only, one that grows by half, and a fixed filter, which overfills.
func TestFootprintHoldingIsWhatAddsMake(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		adds []uint64 // after each number of adds, the footprint is compared
	}{
		{"doubling", Config{Capacity: 1_000, ErrorRate: 0.01}, []uint64{0, 1, 1_000, 1_001, 3_000, 3_001, 7_500}},
		{"equal, counters only", Config{Capacity: 500, ErrorRate: 0.001, Growth: 1, CountersOnly: true}, []uint64{499, 500, 501, 2_600}},
		{"by half", Config{Capacity: 1_000, ErrorRate: 0.02, Growth: 1.5, Tightening: 0.5}, []uint64{2_500, 2_501, 6_000}},
		{"fixed", Config{Capacity: 1_000, ErrorRate: 0.01, Fixed: true}, []uint64{10, 5_000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.tb")
			f, err := Create(path, c.cfg, nil)
			require.NoError(t, err)
			defer f.Close()
			added := uint64(0)
			for _, n := range c.adds {
				for ; added < n; added++ {
					require.NoError(t, f.AddString(fmt.Sprintf("key-%d", added), added+1))
				}
				want, err := FootprintHolding(c.cfg, n)
				require.NoError(t, err)
				info, err := os.Stat(path)
				require.NoError(t, err)
				s := f.Stats()
				got := Footprint{FileBytes: uint64(info.Size()), SubFilters: len(s.SubFilters), CounterBytes: s.CounterBytes, PresenceBytes: s.PresenceBytes}
				for _, sub := range s.SubFilters {
					got.Capacity += sub.Capacity
					got.ErrorRate += sub.ErrorRate
				}
				assert.Equal(t, got, want, "after %d adds", n)
				assert.Equal(t, c.cfg.Fixed && n > got.Capacity, got.Capacity < n, "a Capacity below the adds is an overfilled filter")
			}
		})
	}

	// Keys past what a chain can hold: in 64 equal sub-filters, or in a
	// fourth doubling sub-filter that would take more than a TiB.
	equal := Config{Capacity: 10, ErrorRate: 0.01, Growth: 1}
	fp, err := FootprintHolding(equal, 640)
	require.NoError(t, err)
	assert.Equal(t, MaxSubFilters, fp.SubFilters)
	_, err = FootprintHolding(equal, 641)
	require.ErrorIs(t, err, ErrChainFull)
	assert.EqualError(t, err, "engine: chain full: 641 keys need more than the 64 sub-filters a chain can hold, which are built for 640")
	huge := Config{Capacity: 20_000_000_000, ErrorRate: 0.01}
	fp, err = FootprintHolding(huge, 140_000_000_000)
	require.NoError(t, err)
	assert.Equal(t, 3, fp.SubFilters)
	assert.LessOrEqual(t, fp.ErrorRate, 0.01)
	_, err = FootprintHolding(huge, 140_000_000_001)
	require.ErrorIs(t, err, ErrChainFull)
	assert.Contains(t, err.Error(), "need a sub-filter 4, which could not be built")

	// A refused config is refused as Create refuses it, whatever the keys.
	_, err = FootprintHolding(Config{Capacity: 10, ErrorRate: 2}, 1_000)
	require.ErrorIs(t, err, ErrInvalidConfig)
}

// Over random configs and key counts, FootprintHolding opens sub-filters
// only while those before fall short of the keys, keeps the chain under
// its rate, and refuses only with ErrChainFull or ErrInvalidConfig.
func TestFootprintHoldingOpensNoMoreThanNeeded(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	grown := 0
	for range 100 {
		cfg := Config{
			Capacity:     1 + rng.Uint64N(1_000_000),
			ErrorRate:    []float64{0.1, 0.01, 0.001, 1e-6}[rng.IntN(4)],
			Tightening:   0.3 + 0.65*rng.Float64(),
			Growth:       1 + 3*rng.Float64(),
			Fixed:        rng.IntN(5) == 0,
			CountersOnly: rng.IntN(3) == 0,
		}
		keys := rng.Uint64N(cfg.Capacity * 100)
		fp, err := FootprintHolding(cfg, keys)
		if err != nil {
			require.True(t, errors.Is(err, ErrChainFull) || errors.Is(err, ErrInvalidConfig), "%+v, %d keys: %v", cfg, keys, err)
			continue
		}
		require.GreaterOrEqual(t, fp.SubFilters, 1)
		require.LessOrEqual(t, fp.SubFilters, MaxSubFilters)
		require.LessOrEqual(t, fp.ErrorRate, cfg.ErrorRate*(1+1e-12), "%+v", cfg)
		require.Zero(t, fp.FileBytes%PageSize)
		require.GreaterOrEqual(t, fp.FileBytes, HeaderBytes+fp.CounterBytes+fp.PresenceBytes)
		require.Equal(t, cfg.CountersOnly, fp.PresenceBytes == 0)
		if cfg.Fixed {
			require.Equal(t, 1, fp.SubFilters)
			continue
		}
		require.GreaterOrEqual(t, fp.Capacity, keys, "%+v", cfg)
		if fp.SubFilters > 1 {
			// One sub-filter fewer holds fewer keys than asked for.
			grown++
			last, err := cfg.withDefaults().params().Level(fp.SubFilters - 1)
			require.NoError(t, err)
			before := fp.Capacity - last.Capacity
			require.Less(t, before, keys, "%+v: %d sub-filters would do", cfg, fp.SubFilters-1)
			prev, err := FootprintHolding(cfg, before)
			require.NoError(t, err)
			require.Equal(t, fp.SubFilters-1, prev.SubFilters)
			next, err := FootprintHolding(cfg, before+1)
			require.NoError(t, err)
			require.Equal(t, fp, next)
		}
	}
	require.Greater(t, grown, 50, "most chains grew past one sub-filter")
}
