package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxLine is the longest key line read from standard input.
const maxLine = 1 << 20

// keyItem is one key to work on, with its id when the input gives one.
type keyItem struct {
	key  string
	id   uint64
	line int // 1-based line of standard input, or argument number
}

// keyOptions say how key lines are read.
type keyOptions struct {
	withIDs bool // lines are ID<TAB>KEY
	asURL   bool // keys are URLs stored in canonical form
}

// eachKey calls fn for each key of args or, with no args, of each line of
// in, streaming: the input is never held whole. Blank lines of in are
// skipped (an empty key can be given as an argument).
func eachKey(args []string, in io.Reader, opts keyOptions, fn func(keyItem) error) error {
	parse := func(text string, line int) error {
		item := keyItem{key: text, line: line}
		if opts.withIDs {
			idText, key, ok := strings.Cut(text, "\t")
			id, err := strconv.ParseUint(idText, 10, 64)
			if !ok || err != nil {
				return fmt.Errorf("line %d: want ID<TAB>KEY, got %q", line, clip(text))
			}
			item.id, item.key = id, key
		}
		if opts.asURL {
			canonical, err := canonicalURL(item.key)
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			item.key = canonical
		}
		return fn(item)
	}
	if len(args) > 0 {
		for i, arg := range args {
			if err := parse(arg, i+1); err != nil {
				return err
			}
		}
		return nil
	}
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 64<<10), maxLine)
	n := 1
	for ; lines.Scan(); n++ {
		text := strings.TrimSuffix(lines.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if err := parse(text, n); err != nil {
			return err
		}
	}
	switch err := lines.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("line %d: longer than %d bytes, the longest key line read", n, maxLine)
	case err != nil:
		return fmt.Errorf("reading keys: %w", err)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
