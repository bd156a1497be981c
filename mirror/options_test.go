package mirror

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A claim lasts 10 s unless the options say otherwise, and never less than
// minClaimTTL, which an idle mirror could not renew in time.
func TestClaimTTLOption(t *testing.T) {
	assert.Equal(t, 10*time.Second, (*Options)(nil).withDefaults().ClaimTTL)
	assert.Equal(t, 2*time.Second, (&Options{ClaimTTL: 2 * time.Second}).withDefaults().ClaimTTL)
	assert.Equal(t, minClaimTTL, (&Options{ClaimTTL: time.Millisecond}).withDefaults().ClaimTTL)
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
