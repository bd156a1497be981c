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
)

// Zero options take their defaults; others are used as given.
func TestOptionsDefaults(t *testing.T) {
	d := (*Options)(nil).withDefaults()
	assert.Equal(t, [7]int64{1_000_000, 512, 32 << 20, int64(5 * time.Second), int64(50 * time.Millisecond), int64(10 * time.Second), int64(time.Minute)},
		[7]int64{int64(d.MaxQueue), int64(d.BatchSize), int64(d.PartBytes), int64(d.Timeout), int64(d.Backoff), int64(d.ClaimTTL), int64(d.MaxHold)})
	o := Options{MaxQueue: 7, BatchSize: 3, PartBytes: 4096, Timeout: time.Second, Backoff: time.Millisecond, ClaimTTL: 2 * time.Second, MaxHold: time.Second}
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
	bad := &Options{MaxQueue: -1, BatchSize: -1, PartBytes: 100, Timeout: -time.Second, Backoff: -time.Second, ClaimTTL: time.Millisecond, MaxHold: -time.Second}
	err := bad.Validate()
	assert.ErrorIs(t, err, ErrInvalidOptions)
	for _, field := range []string{"MaxQueue", "BatchSize", "PartBytes", "Timeout", "Backoff", "ClaimTTL", "MaxHold"} {
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
	// A claim some other program wrote, with no nonce after a space, is
	// shown whole.
	for _, foreign := range []string{"foreign", " foreign"} {
		assert.Equal(t, foreign, holderOf(foreign))
	}
}
