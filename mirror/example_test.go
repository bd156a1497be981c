//go:build unix

package mirror_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/redistest"
	"github.com/tallybloom/tallybloom/mirror"
)

// redisURL is a Redis of the examples' own, started by TestMain: in a
// service, the URL of its Redis, as redis://user:password@host:6379.
var redisURL string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mirror-examples")
	if err != nil {
		log.Fatal(err)
	}
	server, err := redistest.Launch(dir)
	if err != nil {
		log.Fatalf("the examples need redis-server (./scripts/test installs it): %v", err)
	}
	redisURL = server.URL()
	code := m.Run()
	server.Kill()
	os.RemoveAll(dir)
	os.Exit(code)
}

// A process that owns a filter file mirrors it into Redis; another checks
// keys against the copy there, with no file of its own.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	f, err := engine.Create(filepath.Join(dir, "spam.tb"), engine.Config{Capacity: 1000, ErrorRate: 0.01}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	r, err := mirror.Dial(redisURL)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	// The owner: every committed change is shipped to Redis.
	m, err := mirror.Attach(f, r, "spam", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	if err := f.Add([]byte("https://bad.example/"), 1); err != nil {
		log.Fatal(err)
	}
	if err := m.Flush(ctx); err != nil { // Redis holds the add
		log.Fatal(err)
	}

	// Elsewhere: checks against the copy in Redis.
	c, err := mirror.NewChecker(ctx, r, "spam")
	if err != nil {
		log.Fatal(err)
	}
	present, err := c.ContainsBatch(ctx, [][]byte{[]byte("https://bad.example/"), []byte("https://good.example/")}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(present)
	// Output: [true false]
}

// Describe says what Redis holds under a name, and which process writes
// its copies.
func ExampleDescribe() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	f, err := engine.Create(filepath.Join(dir, "spam.tb"), engine.Config{Capacity: 1000, ErrorRate: 0.01}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	r, err := mirror.Dial(redisURL)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	if _, err := mirror.Push(ctx, f, r, "described", nil); err != nil {
		log.Fatal(err)
	}

	d, err := mirror.Describe(ctx, r, "described")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("live %v at sequence %d, %d sub-filter, writer %q\n", d.Live, d.Seq, len(d.SubFilters), d.Writer)
	// Output: live true at sequence 1, 1 sub-filter, writer ""
}
