package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A partial last line is a key only at the input's end: a reading cut short
// drops it rather than act on a key cut in two.
func TestAPartialLastLineIsAKeyOnlyAtTheEnd(t *testing.T) {
	read := func(in io.Reader, idle func() error) ([]string, error) {
		var keys []string
		err := eachKey(nil, newKeyReader(in, idle), keyOptions{}, func(k keyItem) error {
			keys = append(keys, k.key)
			return nil
		})
		return keys, err
	}
	noIdle := func() error { return nil }

	keys, err := read(strings.NewReader("a\nb\nlast"), noIdle)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "last"}, keys, "at the end, the last line needs no newline")

	broken := errors.New("disk gone")
	keys, err = read(io.MultiReader(strings.NewReader("a\nb\nhalf-a-k"), iotest.ErrReader(broken)), noIdle)
	assert.ErrorIs(t, err, broken)
	assert.Equal(t, []string{"a", "b"}, keys, "a failed read drops the partial line")

	reads := 0
	refused := errors.New("change refused")
	keys, err = read(iotest.OneByteReader(strings.NewReader("a\nb\nhalf")), func() error {
		if reads++; reads > len("a\nb\nha") {
			return refused
		}
		return nil
	})
	assert.ErrorIs(t, err, refused)
	assert.Equal(t, []string{"a", "b"}, keys, "a failed change ends the reading without the partial line")

	r := newKeyReader(strings.NewReader("a\nb\nhalf"), noIdle)
	keys = nil
	err = eachKey(nil, r, keyOptions{}, func(k keyItem) error {
		keys = append(keys, k.key)
		if k.key == "a" {
			assert.False(t, r.stop(), "not waiting for input while a key is acted on")
		}
		return nil
	})
	assert.ErrorIs(t, err, errStopped)
	assert.Equal(t, []string{"a", "b"}, keys, "a stop gives the lines already read, not the partial one")
}

// With --keep-going, a line too long to be a key is reported by its number
// and passed over, however long, and the lines after it are read.
func TestKeepGoingPassesOverALongLine(t *testing.T) {
	long := strings.Repeat("y", 3*maxLine)
	tooLongAt := func(line int) string {
		return fmt.Sprintf("line %d: longer than %d bytes, the longest key line read", line, maxLine)
	}
	read := func(in io.Reader) (keys []string, skipped []string, err error) {
		opts := keyOptions{skip: func(err error) { skipped = append(skipped, err.Error()) }}
		err = eachKey(nil, newKeyReader(in, func() error { return nil }), opts, func(k keyItem) error {
			keys = append(keys, k.key)
			return nil
		})
		return keys, skipped, err
	}

	keys, skipped, err := read(iotest.HalfReader(strings.NewReader("a\n" + long + "\r\nb\n" + long + "\nc\n" + long)))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, keys)
	assert.Equal(t, []string{tooLongAt(2), tooLongAt(4), tooLongAt(6)}, skipped,
		"each long line named, the last one too though no newline ends it")

	keys, skipped, err = read(strings.NewReader("a\n" + strings.Repeat("y", maxLine) + "\nb\n" + strings.Repeat("z", maxLine)))
	require.NoError(t, err)
	assert.Len(t, keys, 4, "a line of the longest length is a key, with or without a newline")
	assert.Empty(t, skipped)

	// A last line one byte too long, with no newline, that fills the
	// buffer in the read that ends the input.
	keys, skipped, err = read(iotest.DataErrReader(strings.NewReader("a\n" + strings.Repeat("y", maxLine+1))))
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, keys)
	assert.Equal(t, []string{tooLongAt(2)}, skipped)

	broken := errors.New("disk gone")
	keys, skipped, err = read(io.MultiReader(strings.NewReader("a\n"+long), iotest.ErrReader(broken)))
	assert.ErrorIs(t, err, broken)
	assert.Equal(t, []string{"a"}, keys)
	assert.Empty(t, skipped, "a long line a failed read cut short is dropped, not named as read")
}

// FuzzKeyLines checks the reading of key lines against a model, with a
// short longest line and the input in pieces of any size: each line is a
// key, a blank one nothing, and one longer than the longest is, with
// --keep-going, reported by its number and passed over, or, without it,
// the end of the reading with that number.
func FuzzKeyLines(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nlong line here\nc"), uint8(4), uint8(3), true)
	f.Add([]byte("12345"), uint8(4), uint8(200), false)
	f.Fuzz(func(t *testing.T, input []byte, longest, piece uint8, keepGoing bool) {
		var wantKeys []string
		var wantSkipped []int
		wantEnd := 0 // the line that ends the reading, if any
		lines := strings.Split(string(input), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1] // the input ends with a newline
		}
		for i, line := range lines {
			switch key := strings.TrimSuffix(strings.TrimSuffix(line, "\r"), "\r"); {
			case len(line) > int(longest) && keepGoing:
				wantSkipped = append(wantSkipped, i+1)
			case len(line) > int(longest):
				wantEnd = i + 1
			case strings.TrimSpace(key) != "":
				wantKeys = append(wantKeys, key)
			}
			if wantEnd != 0 {
				break
			}
		}

		var keys []string
		var skipped []int
		opts := keyOptions{}
		if keepGoing {
			opts.skip = func(err error) {
				var n int
				_, scanErr := fmt.Sscanf(err.Error(), "line %d: longer than", &n)
				require.NoError(t, scanErr, err.Error())
				skipped = append(skipped, n)
			}
		}
		// Pieces as a slow producer writes them, the last one with io.EOF.
		in := iotest.DataErrReader(&pieces{data: input, size: int(piece)%7 + 1})
		r := newKeyReader(in, func() error { return nil })
		r.longest = int(longest)
		err := eachKey(nil, r, opts, func(k keyItem) error {
			keys = append(keys, k.key)
			return nil
		})
		if wantEnd != 0 {
			assert.EqualError(t, err, fmt.Sprintf("line %d: longer than %d bytes, the longest key line read", wantEnd, longest))
		} else {
			assert.NoError(t, err)
		}
		assert.Equal(t, wantKeys, keys)
		assert.Equal(t, wantSkipped, skipped)
	})
}

// pieces reads its data at most size bytes a read.
type pieces struct {
	data []byte
	size int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.size)], p.data)
	p.data = p.data[n:]
	return n, nil
}

// whileWaiting looks every period while the reader waits for input, not
// while a key it read is acted on, and not once stopped.
func TestLooksWhileTheInputWaits(t *testing.T) {
	in, feed := io.Pipe()
	r := newKeyReader(in, func() error { return nil })
	var looks atomic.Int32
	stop := r.whileWaiting(time.Millisecond, func() { looks.Add(1) })
	errLooked := errors.New("looked while a key was acted on")
	done := make(chan error, 1)
	go func() {
		done <- eachKey(nil, r, keyOptions{}, func(keyItem) error {
			before := looks.Load()
			time.Sleep(30 * time.Millisecond)
			if looks.Load() != before {
				return errLooked
			}
			return nil
		})
	}()
	waited := func(more int32, what string) {
		from := looks.Load()
		require.Eventually(t, func() bool { return looks.Load() >= from+more }, 10*time.Second, time.Millisecond, what)
	}
	waited(3, "looks while the reader waits for its first line")
	_, err := io.WriteString(feed, "a\n")
	require.NoError(t, err)
	waited(3, "looks again while the reader waits for the next line")

	stop()
	after := looks.Load()
	time.Sleep(30 * time.Millisecond)
	assert.Equal(t, after, looks.Load(), "no look once stopped, though the reader still waits")
	require.NoError(t, feed.Close())
	require.NoError(t, <-done)
}
