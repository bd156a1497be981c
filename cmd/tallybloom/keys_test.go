package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

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
	assert.Equal(t, []string{tooLong(2).Error(), tooLong(4).Error(), tooLong(6).Error()}, skipped,
		"each long line named, the last one too though no newline ends it")

	keys, skipped, err = read(strings.NewReader("a\n" + strings.Repeat("y", maxLine-1) + "\nb\n"))
	require.NoError(t, err)
	assert.Len(t, keys, 3, "a line that fits is a key")
	assert.Empty(t, skipped)

	broken := errors.New("disk gone")
	keys, skipped, err = read(io.MultiReader(strings.NewReader("a\n"+long), iotest.ErrReader(broken)))
	assert.ErrorIs(t, err, broken)
	assert.Equal(t, []string{"a"}, keys)
	assert.Empty(t, skipped, "a long line a failed read cut short is dropped, not named as read")
}
