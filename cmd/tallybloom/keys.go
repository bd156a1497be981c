package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/urlkey"
)

// maxLine is the longest key line read from standard input.
const maxLine = 1 << 20

// keyItem is one key to work on, with its id when the input gives one.
type keyItem struct {
	key  string
	id   uint64
	at   place  // where it was given, for errors
	text string // the line or argument as given, which dedupe prints
}

// place is where a key was given: a line of standard input, or one of the
// command's arguments, counted from 1.
type place struct {
	n   int
	arg bool
}

func (p place) String() string {
	if p.arg {
		return "argument " + strconv.Itoa(p.n)
	}
	return "line " + strconv.Itoa(p.n)
}

// keyOptions say how key lines are read.
type keyOptions struct {
	withIDs bool // lines are ID<TAB>KEY
	asURL   bool // keys are URLs stored in canonical form
	// skip, if set, is given each line that cannot be read as a key (not
	// ID<TAB>KEY, not a URL), which is then left out while the reading
	// goes on (--keep-going); without it such a line ends the reading.
	skip func(error)
}

// lineSkipper reports each line --keep-going leaves out, one line on
// standard error, and counts them; with args, they are arguments.
type lineSkipper struct {
	report func(line string)
	args   bool
	lines  int
}

func (s *lineSkipper) skip(err error) {
	s.lines++
	s.report(fmt.Sprintf("tallybloom: %v: left out", err))
}

// err ends a command that left lines out with exit 2, after its work, as
// make -k does: done says what became of the other keys.
func (s *lineSkipper) err(done string) error {
	if s.lines == 0 {
		return nil
	}
	noun := "line"
	if s.args {
		noun = "argument"
	}
	return &exitCode{code: exitError, err: fmt.Errorf("%s left out, reported above (--keep-going); %s", counted(s.lines, noun), done)}
}

// keepGoingFlag registers --keep-going on cmd.
func keepGoingFlag(cmd *cobra.Command, keepGoing *bool) {
	cmd.Flags().BoolVarP(keepGoing, "keep-going", "k", false,
		"report a line that is not a key (not a URL, not ID<TAB>KEY, over 1 MiB), leave it out and go on; exit 2 at the end")
}

// eachKey calls fn for each key of args or, with no args, of each line of
// in, streaming: the input is never held whole. Blank lines of in are
// skipped (an empty key can be given as an argument).
func eachKey(args []string, in *keyReader, opts keyOptions, fn func(keyItem) error) error {
	parse := func(text string, at place) error {
		item := keyItem{key: text, at: at, text: text}
		if opts.withIDs {
			idText, key, ok := strings.Cut(text, "\t")
			id, err := strconv.ParseUint(idText, 10, 64)
			if !ok || err != nil {
				return opts.unreadable(fmt.Errorf("%v: want ID<TAB>KEY, got %q", at, clip(text)))
			}
			item.id, item.key = id, key
		}
		if opts.asURL {
			canonical, err := urlkey.Canonical(item.key)
			if err != nil {
				return opts.unreadable(fmt.Errorf("%v: %w", at, err))
			}
			item.key = canonical
		}
		return fn(item)
	}
	if len(args) > 0 {
		for i, arg := range args {
			if err := parse(arg, place{n: i + 1, arg: true}); err != nil {
				return err
			}
		}
		return nil
	}
	lines := bufio.NewScanner(in)
	// Room for the longest line and its newline.
	lines.Buffer(make([]byte, min(64<<10, in.longest+1)), in.longest+1)
	lines.Split(in.split)
	in.passLong = opts.skip != nil
	n := 1
	for ; lines.Scan(); n++ {
		if in.long {
			opts.skip(in.tooLong(n))
			continue
		}
		text := strings.TrimSuffix(lines.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if err := parse(text, place{n: n}); err != nil {
			return err
		}
	}
	switch err := lines.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return in.tooLong(n)
	case errors.Is(err, errStopped):
		return errStopped
	case in.idleErr != nil:
		return in.idleErr
	case err != nil:
		return fmt.Errorf("reading keys: %w", err)
	}
	return nil
}

func (r *keyReader) tooLong(line int) error {
	return fmt.Errorf("line %d: longer than %d bytes, the longest key line read", line, r.longest)
}

// unreadable is what becomes of a line that cannot be read as a key: err,
// which ends the reading, or, with skip, nothing.
func (opts keyOptions) unreadable(err error) error {
	if opts.skip == nil {
		return err
	}
	opts.skip(err)
	return nil
}

// errStopped ends the reading of keys that stop asked for.
var errStopped = errors.New("interrupted")

// keyReader is the standard input of a command that reads keys. Before each
// read of it, which may wait for a slow producer (tail -f, a person typing),
// it calls idle, so that the command acts on the keys it has before it waits
// for more. stop ends the reading at a line's end: the lines already read
// are still given, a partial line is dropped, and nothing more is read.
type keyReader struct {
	in      io.Reader
	idle    func() error
	idleErr error // what idle returned, which ended the reading
	ended   bool  // in said io.EOF: a partial last line is the last key
	longest int   // the longest line read, maxLine (less in tests)

	// passLong (--keep-going) makes a line longer than longest a token
	// of its own, its bytes passed over as they come and never held,
	// where without it the scanner fails on such a line.
	passLong bool
	inLong   bool // in such a line: its bytes up to the newline are dropped
	long     bool // the token last split off is such a line, without its text

	mu      sync.Mutex
	waiting bool // in a read of in, every key before it acted on
	stopped bool
}

func newKeyReader(in io.Reader, idle func() error) *keyReader {
	return &keyReader{in: in, idle: idle, longest: maxLine}
}

func (r *keyReader) Read(p []byte) (int, error) {
	if r.idleErr = r.idle(); r.idleErr != nil {
		return 0, r.idleErr
	}
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return 0, errStopped
	}
	r.waiting = true
	r.mu.Unlock()
	n, err := r.in.Read(p)
	r.ended = err == io.EOF
	// After a stop that found the reader waiting, the lock stays taken
	// and this waits until the process ends: what it read is not acted on.
	r.mu.Lock()
	r.waiting = false
	r.mu.Unlock()
	return n, err
}

// stop ends the reading. If the reader is waiting for input, so that every
// key before was acted on, it reports true and keeps the reader from
// returning anything more: the caller ends the process. Otherwise the
// reading ends at the next read.
func (r *keyReader) stop() (waiting bool) {
	r.mu.Lock()
	r.stopped = true
	if r.waiting {
		return true // held until the process ends
	}
	r.mu.Unlock()
	return false
}

// whileWaiting calls look every period while the reader waits for input,
// until the returned stop is called, which returns once no look runs. A
// look runs with the reader's lock held: the reading goroutine is then in
// its read of in, or waits to leave it, and acts on nothing meanwhile.
func (r *keyReader) whileWaiting(every time.Duration, look func()) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
			}
			r.mu.Lock()
			if r.waiting && !r.stopped {
				look()
			}
			r.mu.Unlock()
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// split is bufio.ScanLines, but a partial last line is a key only at the
// input's end: when the reading ends otherwise (a stop, a failed read, a
// change that failed) it is cut short, and dropped. With passLong, a line
// longer than longest becomes an empty token with long set.
func (r *keyReader) split(data []byte, atEOF bool) (int, []byte, error) {
	atEnd := atEOF && r.ended
	r.long = false
	if r.inLong {
		i := bytes.IndexByte(data, '\n')
		switch {
		case i >= 0:
			r.inLong, r.long = false, true
			return i + 1, []byte{}, nil
		case atEnd:
			r.inLong, r.long = false, true
			return len(data), []byte{}, nil
		case atEOF:
			return 0, nil, nil // cut short
		}
		return len(data), nil, nil
	}
	advance, token, err := bufio.ScanLines(data, atEnd)
	raw := advance // the line's length, without its newline
	if raw > 0 && data[raw-1] == '\n' {
		raw--
	}
	switch {
	case token == nil && len(data) > r.longest && r.passLong:
		r.inLong = true // the buffer is full and holds no newline
		return len(data), nil, nil
	case token != nil && raw > r.longest && r.passLong:
		r.long = true // a last line that filled the buffer at the end
		return advance, []byte{}, nil
	case token != nil && raw > r.longest:
		return 0, nil, bufio.ErrTooLong
	}
	return advance, token, err
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
