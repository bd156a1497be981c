package mirror

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the part of a Redis client the mirror uses: running its scripts.
// Everything the mirror does is a script, so it behaves the same on one
// server and on a cluster (all of a filter's keys share a slot).
type Redis interface {
	// Eval runs script with keys and args; readOnly scripts may run on a
	// replica.
	Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error)
	Close() error
}

// Script is a Lua script the mirror runs by its hash, sending the source
// only when Redis does not know it yet.
type Script struct{ s *redis.Script }

func newScript(src string) *Script { return &Script{redis.NewScript(src)} }

// timed is r with each call bounded by timeout, and a refusal for want of
// memory told as ErrRedisFull.
type timed struct {
	Redis
	timeout time.Duration
}

func (t timed) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	answer, err := t.Redis.Eval(ctx, s, readOnly, keys, args...)
	return answer, redisFull(err)
}

// goRedis adapts go-redis, a standalone or cluster client.
type goRedis struct{ c redis.UniversalClient }

func (g goRedis) Eval(ctx context.Context, s *Script, readOnly bool, keys []string, args ...any) (any, error) {
	if _, ok := ctx.Deadline(); ok || ctx.Done() == nil {
		return g.eval(ctx, s, readOnly, keys, args)
	}
	// go-redis ends a call at its context's deadline, but does not heed
	// the cancellation of a context with no deadline: it reads on until
	// Redis answers or its read timeout passes. Such a call returns at once
	// instead; the answer, should it come, is dropped, as one a connection
	// loses is, which every script of the mirror is safe against. Handing
	// the call to a goroutine costs about a fifth of a one-key check's
	// time on a local Redis, so calls with a deadline, the mirror's own
	// among them, go straight to go-redis.
	answered := make(chan evalAnswer, 1)
	go func() {
		answer, err := g.eval(ctx, s, readOnly, keys, args)
		answered <- evalAnswer{answer, err}
	}()
	select {
	case a := <-answered:
		return a.answer, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("mirror: a call to Redis: %w", ctx.Err())
	}
}

type evalAnswer struct {
	answer any
	err    error
}

func (g goRedis) eval(ctx context.Context, s *Script, readOnly bool, keys []string, args []any) (any, error) {
	run := s.s.Run
	if readOnly {
		run = s.s.RunRO
	}
	answer, err := run(ctx, g.c, keys, args...).Result()
	if cut := contextError(ctx); err != nil && cut != nil && !errors.Is(err, cut) {
		// The context cut the call short: say so, for errors.Is.
		err = fmt.Errorf("%w: %w", cut, err)
	}
	return answer, err
}

// contextError is ctx's error, or DeadlineExceeded once its deadline has
// passed: a socket deadline set from it may fire before its timer does.
func contextError(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (g goRedis) Close() error { return g.c.Close() }

// Dial connects to one Redis server: redis://[user:password@]host:port[/db],
// or rediss:// for TLS. Errors name the host, never the credentials. A call
// returns at its context's deadline, and, under a context with no deadline,
// when the context is cancelled, whether or not Redis has answered. (A
// context with a deadline that is cancelled earlier ends the call when
// Redis answers or at the deadline.)
func Dial(rawURL string) (Redis, error) {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, urlError(rawURL, err)
	}
	opts.MaxRetries = -1 // the mirror retries itself; its scripts are safe to resend
	// A call's context bounds its reads and writes, so Options.Timeout
	// and a checker's context hold against a server that stopped
	// answering; go-redis otherwise waits for its own read timeout.
	opts.ContextTimeoutEnabled = true
	return goRedis{redis.NewClient(opts)}, nil
}

// DialCluster connects to a Redis Cluster: redis://[user:password@]host:port
// with more nodes as ?addr=host:port parameters, or rediss:// for TLS. Its
// calls end with their contexts, as Dial's do.
func DialCluster(rawURL string) (Redis, error) {
	opts, err := redis.ParseClusterURL(rawURL)
	if err != nil {
		return nil, urlError(rawURL, err)
	}
	opts.MaxRetries = -1
	opts.ContextTimeoutEnabled = true
	return goRedis{redis.NewClusterClient(opts)}, nil
}

// urlError is ErrInvalidURL for rawURL, which did not parse with err. A URL
// without a scheme, host:port as other tools take it, is told the form to
// write.
func urlError(rawURL string, err error) error {
	if !strings.Contains(rawURL, "://") {
		return fmt.Errorf("%w: %s: want redis://host:port, or rediss://host:port for TLS", ErrInvalidURL, Redact(rawURL))
	}
	return fmt.Errorf("%w: %s: %w", ErrInvalidURL, Redact(rawURL), withoutURL(err))
}

// withoutURL drops a *url.Error's URL, which holds the password.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Redact is rawURL without its password, for logs and errors.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err == nil && u.Opaque == "" {
		return u.Redacted()
	}
	// Not scheme://host: anything before an @ may hold a password.
	if at := strings.LastIndex(rawURL, "@"); at >= 0 {
		return "xxxxx" + rawURL[at:]
	}
	return rawURL
}
