package mirror

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
)

// Zero options take their defaults; others are used as given.
func TestOptionsDefaults(t *testing.T) {
	d := (*Options)(nil).withDefaults()
	assert.Equal(t, [6]int64{1_000_000, 512, 32 << 20, int64(5 * time.Second), int64(50 * time.Millisecond), int64(10 * time.Second)},
		[6]int64{int64(d.MaxQueue), int64(d.BatchSize), int64(d.PartBytes), int64(d.Timeout), int64(d.Backoff), int64(d.ClaimTTL)})
	o := Options{MaxQueue: 7, BatchSize: 3, PartBytes: 4096, Timeout: time.Second, Backoff: time.Millisecond, ClaimTTL: 2 * time.Second}
	require.NoError(t, o.Validate())
	d = o.withDefaults()
	d.holdBytes = 0
	assert.Equal(t, o, d)
}

// Validate reports every problem at once, each ErrInvalidOptions; Attach
// and Push refuse such options before they touch the filter or Redis.
func TestOptionsValidate(t *testing.T) {
	assert.NoError(t, (*Options)(nil).Validate())
	assert.NoError(t, (&Options{}).Validate())
	assert.NoError(t, (&Options{PartBytes: maxPartBytes, ClaimTTL: minClaimTTL}).Validate())
	bad := &Options{MaxQueue: -1, BatchSize: -1, PartBytes: 100, Timeout: -time.Second, Backoff: -time.Second, ClaimTTL: time.Millisecond}
	err := bad.Validate()
	assert.ErrorIs(t, err, ErrInvalidOptions)
	for _, field := range []string{"MaxQueue", "BatchSize", "PartBytes", "Timeout", "Backoff", "ClaimTTL"} {
		assert.ErrorContains(t, err, field)
	}
	assert.ErrorIs(t, (&Options{PartBytes: maxPartBytes + 64}).Validate(), ErrInvalidOptions)
	assert.ErrorIs(t, (&Options{ClaimTTL: -time.Second}).Validate(), ErrInvalidOptions)

	f, err := engine.Create(filepath.Join(t.TempDir(), "f.tb"), engine.Config{Capacity: 100, ErrorRate: 0.01}, nil)
	require.NoError(t, err)
	defer f.Close()
	_, err = Attach(f, nil, "name", bad)
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = Push(context.Background(), f, nil, "name", bad)
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

// A writer's token names its host and process, which ErrNameTaken shows,
// and a nonce no other writer has.
func TestOwnerToken(t *testing.T) {
	a, b := newOwner(time.Second), newOwner(time.Second)
	assert.NotEqual(t, a.token, b.token)
	host, _ := os.Hostname()
	assert.Equal(t, host+" pid "+strconv.Itoa(os.Getpid()), holderOf(a.token))
	assert.True(t, strings.HasPrefix(a.token, holderOf(a.token)+" "))
	assert.Equal(t, []any{a.token, int64(1000)}, a.args())
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
