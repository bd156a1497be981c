package mirror

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"
)

// claimTTL is how long a claim on a name outlives its holder's last call
// by default (Options.ClaimTTL), and minClaimTTL the shortest allowed: an
// idle Mirror renews its claim three times in that time.
const (
	claimTTL    = 10 * time.Second
	minClaimTTL = 100 * time.Millisecond
)

// owner is who writes a name's copies: a token no other process has, and
// how long its claim lasts. The token names the host and process, so that
// ErrNameTaken can say who holds the name.
type owner struct {
	token string
	ttl   time.Duration
}

func newOwner(ttl time.Duration) owner {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	return owner{token: thisProcess() + " " + hex.EncodeToString(nonce[:]), ttl: ttl}
}

// thisProcess is the host and process a claim's token names.
func thisProcess() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}

// args are the claim's arguments to a script that claims (see claimLua).
func (o owner) args() []any { return []any{o.token, o.ttl.Milliseconds()} }

// claimLua is the Lua that claims the name for the writer ARGV[arg] for
// ARGV[arg+1] ms, before a script writes, or refuses with TBTAKEN and the
// holder's token; KEYS[key] is the claim.
func claimLua(key, arg int) string {
	return fmt.Sprintf(`
local holder = redis.call('GET', KEYS[%[1]d])
if holder and holder ~= ARGV[%[2]d] then return redis.error_reply('TBTAKEN ' .. holder) end
redis.call('SET', KEYS[%[1]d], ARGV[%[2]d], 'PX', ARGV[%[2]d + 1])
`, key, arg)
}

// claimScript claims, or renews the claim on, a name. KEYS[1] is the claim;
// ARGV: token, ms.
var claimScript = newScript(claimLua(1, 1) + `return 'OK'`)

// releaseScript gives a name up, if the claim is still ARGV[1]'s.
var releaseScript = newScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 'OK'
`)

// claim claims, or renews the claim on, k's name for o.
func claim(ctx context.Context, r Redis, k keys, o owner) error {
	_, err := r.Eval(ctx, claimScript, false, []string{k.owner()}, o.args()...)
	if err != nil {
		return fmt.Errorf("mirror: claiming %q: %w", k.name, takenError(err))
	}
	return nil
}

// release gives k's name up, if o still holds it, waiting for Redis a
// second at most (less if timeout is shorter): a writer that stops should
// not hang on a Redis gone away, and a claim Redis is not told of expires.
func release(r Redis, k keys, o owner, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), min(timeout, time.Second))
	defer cancel()
	_, _ = r.Eval(ctx, releaseScript, false, []string{k.owner()}, o.token)
}

// claimedByAnother reports that err is a script's refusal to write under a
// name another writer claimed.
func claimedByAnother(err error) bool { return strings.HasPrefix(scriptError(err), "TBTAKEN ") }

// takenError is err as ErrNameTaken, naming the holder, if a script found
// the name claimed by another, or as ErrBadAnswer if a key the script read
// (the claim, say) holds a value the mirror did not write.
func takenError(err error) error {
	if claimedByAnother(err) {
		holder := holderOf(strings.TrimPrefix(scriptError(err), "TBTAKEN "))
		if holder == thisProcess() {
			return fmt.Errorf("%w: this process (%s) holds it, through another Mirror or Push of that name", ErrNameTaken, holder)
		}
		return fmt.Errorf("%w: %s holds it", ErrNameTaken, holder)
	}
	if err != nil && strings.Contains(err.Error(), "WRONGTYPE") {
		return fmt.Errorf("%w: a key of the name is not a tallybloom mirror's: %v", ErrBadAnswer, err)
	}
	return err
}

// holderOf is a claim's token without its nonce: the host and process.
func holderOf(token string) string {
	if i := strings.LastIndexByte(token, ' '); i > 0 {
		return token[:i]
	}
	return token
}
