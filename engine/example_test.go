package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tallybloom/tallybloom/engine"
)

// A spam list: URLs added with the Unix time they were reported, checked on
// every redirect, and expired a day at a time.
func Example() {
	dir, _ := os.MkdirTemp("", "tallybloom")
	defer os.RemoveAll(dir)

	f, err := engine.Create(filepath.Join(dir, "spam.tb"), engine.Config{Capacity: 100_000, ErrorRate: 0.001}, nil)
	if err != nil {
		panic(err)
	}
	const day = 86_400
	reported := uint64(1_700_000_000)
	_ = f.Add([]byte("spam.example/win-a-prize"), reported)
	_ = f.Add([]byte("phish.example/login"), reported+day)

	fmt.Println(f.Contains([]byte("spam.example/win-a-prize")))
	fmt.Println(f.Contains([]byte("docs.example/welcome")))

	// A false report is taken back with the id it was added with.
	_ = f.Remove([]byte("phish.example/login"), reported+day)
	fmt.Println(f.Contains([]byte("phish.example/login")))
	fmt.Println(errors.Is(f.Remove([]byte("never.example/added"), reported), engine.ErrNotFound))

	if err := f.Close(); err != nil {
		panic(err)
	}
	// Output:
	// true
	// false
	// false
	// true
}

// Open maps the file and is ready: nothing is rebuilt.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "tallybloom")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "filter.tb")

	f, _ := engine.Create(path, engine.Config{Capacity: 1000, ErrorRate: 0.01}, nil)
	_ = f.AddString("https://spam.example/", 1)
	_ = f.Close()

	f, err := engine.Open(path, nil)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	s := f.Stats()
	fmt.Println(f.ContainsString("https://spam.example/"), s.Count, s.MemSeq == s.DiskSeq)
	// Output: true 1 true
}

// An export moves a filter to another machine as one stream; Import makes
// a file of it there. A file given whole is read as a WholeStream, so that
// anything after its export (a second export appended, say) is refused
// rather than left unread.
func ExampleImport() {
	dir, _ := os.MkdirTemp("", "tallybloom")
	defer os.RemoveAll(dir)

	f, _ := engine.Create(filepath.Join(dir, "spam.tb"), engine.Config{Capacity: 1000, ErrorRate: 0.01}, nil)
	_ = f.AddString("https://spam.example/", 1)
	var export bytes.Buffer
	if err := f.Export(&export); err != nil {
		panic(err)
	}
	_ = f.Close()

	g, err := engine.Import(filepath.Join(dir, "copy.tb"), engine.WholeStream(bytes.NewReader(export.Bytes())), nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.ContainsString("https://spam.example/"), g.Stats().Count)
	_ = g.Close()

	twice := bytes.Repeat(export.Bytes(), 2)
	_, err = engine.Import(filepath.Join(dir, "twice.tb"), engine.WholeStream(bytes.NewReader(twice)), nil)
	_, statErr := os.Stat(filepath.Join(dir, "twice.tb"))
	fmt.Println(errors.Is(err, engine.ErrCorrupt), errors.Is(statErr, fs.ErrNotExist))
	// Output:
	// true 1
	// true true
}

// TestAndAdd deduplicates a click log in one step.
func ExampleFilter_TestAndAdd() {
	dir, _ := os.MkdirTemp("", "tallybloom")
	defer os.RemoveAll(dir)
	f, _ := engine.Create(filepath.Join(dir, "clicks.tb"), engine.Config{Capacity: 1000, ErrorRate: 0.001}, nil)
	defer f.Close()

	for i, click := range []string{"u1:ad7", "u2:ad7", "u1:ad7"} {
		seen, _ := f.TestAndAddString(click, uint64(i))
		fmt.Println(click, seen)
	}
	// Output:
	// u1:ad7 false
	// u2:ad7 false
	// u1:ad7 true
}

// DropBefore expires every sub-filter whose ids are all older than a cutoff,
// and so makes room in a chain, which holds at most MaxSubFilters: a
// service that watches its Stats retires old ones before adds fail with
// ErrChainFull.
func ExampleFilter_DropBefore() {
	dir, _ := os.MkdirTemp("", "tallybloom")
	defer os.RemoveAll(dir)
	f, _ := engine.Create(filepath.Join(dir, "expiring.tb"), engine.Config{Capacity: 10, ErrorRate: 0.01, Growth: 1}, nil)
	defer f.Close()

	for hour := range uint64(30) {
		_ = f.Add(fmt.Appendf(nil, "url-%d", hour), hour)
	}
	fmt.Println("sub-filters:", len(f.Stats().SubFilters))
	dropped, _ := f.DropBefore(20)
	fmt.Println("dropped:", dropped, "oldest id kept:", f.Stats().SubFilters[0].FirstID)
	fmt.Println(f.ContainsString("url-3"), f.ContainsString("url-25"))
	fmt.Println("room for", engine.MaxSubFilters-len(f.Stats().SubFilters), "more sub-filters")
	// Output:
	// sub-filters: 3
	// dropped: 2 oldest id kept: 20
	// false true
	// room for 63 more sub-filters
}

// After a machine crash with unflushed changes, Open refuses to pretend.
// The file is made again from a copy (mirror.Restore, or Import with
// Options.Replace), and the caller's log replayed after the copy's own
// sequence, its Stats().MemSeq, which may be ahead of DurableSeq.
func ExampleUncleanError() {
	err := error(&engine.UncleanError{Path: "spam.tb", DurableSeq: 41})
	var unclean *engine.UncleanError
	if errors.Is(err, engine.ErrUnclean) && errors.As(err, &unclean) {
		fmt.Printf("%s: changes after sequence %d may be lost\n", unclean.Path, unclean.DurableSeq)
	}
	// Output: spam.tb: changes after sequence 41 may be lost
}

// Sizing a filter before there is room for it: what the file takes when
// made, and once it holds a billion keys.
func ExampleFootprintHolding() {
	cfg := engine.Config{Capacity: 10_000_000, ErrorRate: 0.001}
	made, _ := engine.FootprintOf(cfg)
	grown, _ := engine.FootprintHolding(cfg, 1_000_000_000)
	fmt.Printf("made: %d MiB in %d sub-filter\n", made.FileBytes>>20, made.SubFilters)
	fmt.Printf("a billion keys: %d GiB in %d sub-filters, at most %.5f false positives\n", grown.FileBytes>>30, grown.SubFilters, grown.ErrorRate)
	_, err := engine.FootprintHolding(engine.Config{Capacity: 10, ErrorRate: 0.01, Growth: 1}, 1000)
	fmt.Println(errors.Is(err, engine.ErrChainFull))
	// Output:
	// made: 179 MiB in 1 sub-filter
	// a billion keys: 24 GiB in 7 sub-filters, at most 0.00052 false positives
	// true
}

// A writer that flushes itself once its changes pause, so that a machine
// crash while it is idle finds the file clean.
func ExampleOptions_flushWhenIdle() {
	dir, _ := os.MkdirTemp("", "tallybloom")
	defer os.RemoveAll(dir)

	opts := &engine.Options{FlushWhenIdle: 10 * time.Millisecond}
	f, err := engine.Create(filepath.Join(dir, "spam.tb"), engine.Config{Capacity: 1000, ErrorRate: 0.01}, opts)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	_ = f.AddString("spam.example", 2) // the file is dirty: not flushed
	for s := f.Stats(); s.DiskSeq != s.MemSeq; s = f.Stats() {
		time.Sleep(time.Millisecond) // until 10 ms pass without a change
	}
	fmt.Println("on disk up to sequence", f.Stats().DiskSeq)
	// Output: on disk up to sequence 2
}

// A file made again in place of one, from an export, as after a machine
// crash left it unclean; a writer that has the file open stops it.
func ExampleOptions_replace() {
	dir, _ := os.MkdirTemp("", "tallybloom")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "spam.tb")

	f, _ := engine.Create(path, engine.Config{Capacity: 1000, ErrorRate: 0.01}, nil)
	_ = f.AddString("spam.example", 1)
	var export bytes.Buffer
	_ = f.Export(&export)

	_, err := engine.Import(path, bytes.NewReader(export.Bytes()), &engine.Options{Replace: true})
	fmt.Println(errors.Is(err, engine.ErrLocked))
	_ = f.Close()

	g, err := engine.Import(path, bytes.NewReader(export.Bytes()), &engine.Options{Replace: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(g.ContainsString("spam.example"))
	_ = g.Close()
	// Output:
	// true
	// true
}
