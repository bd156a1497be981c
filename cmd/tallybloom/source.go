package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/tallybloom/tallybloom/engine"
)

// checker answers membership: a filter file, a portable export or a frozen
// filter.
type checker interface {
	Contains(key []byte) bool
	ContainsString(key string) bool
}

// openForCheck opens path as whatever it holds: a filter file (with opts,
// read-only: no lock), or a portable or frozen export, binary or base64.
// An export may also come through a pipe (check <(curl …) or /dev/stdin),
// read once. A filter file is followed: a file renamed over path is checked
// from the next batch of keys on, and said is told of it.
func openForCheck(path string, opts *engine.Options, said io.Writer) (batchChecker, func() error, error) {
	data, asFilter, err := exportBytes(path)
	if err != nil {
		return nil, nil, err
	}
	if asFilter {
		file, err := openFollowed(path, opts)
		if err != nil {
			return nil, nil, err
		}
		return &followingChecker{file, said}, func() error { return file.Close() }, nil
	}
	c, err := exportChecker(path, data)
	if err != nil {
		return nil, nil, err
	}
	return localChecker{c}, func() error { return nil }, nil
}

// exportChecker loads data, read from path, as a portable or frozen export,
// binary or base64, with nothing after it.
func exportChecker(path string, data []byte) (checker, error) {
	stream := decoded(bytes.NewReader(data))
	head, _ := stream.Peek(len(engine.ExportMagic))
	var c checker
	var err error
	// One export and nothing after it, as for import.
	switch whole := engine.WholeStream(stream); {
	case startsAs(head, engine.ExportMagic):
		c, err = engine.ReadExport(whole)
	case startsAs(head, engine.FrozenMagic):
		c, err = engine.ReadFrozen(whole)
	default:
		return nil, fmt.Errorf("%w: %s is neither a filter file nor an export", engine.ErrNotFilter, path)
	}
	if err != nil {
		return nil, inExport(path, err)
	}
	return c, nil
}

// inExport names the export path (or "-") in err, if err is the engine's
// word on the export's bytes rather than on the file being made of it.
func inExport(path string, err error) error {
	if !errors.Is(err, engine.ErrCorrupt) && !errors.Is(err, engine.ErrVersion) && !errors.Is(err, engine.ErrNotFilter) {
		return err
	}
	if path == "-" {
		path = "standard input"
	}
	return fmt.Errorf("%s: %w", path, err)
}

// exportBytes reads what path holds, for check, unless engine.Open is the
// one to open it (asFilter): a filter file, and anything but a file or a
// pipe (missing, a directory, a device), which engine.Open explains.
func exportBytes(path string) (data []byte, asFilter bool, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, true, nil
	}
	switch mode := info.Mode(); {
	case mode&fs.ModeNamedPipe != 0:
		// Read once: a pipe cannot be read again.
		data, err := os.ReadFile(path)
		if err == nil && startsAs(data, engine.Magic) {
			err = fmt.Errorf("%w: %s is a filter file coming through a pipe; check maps a filter file where it lies: give its path", engine.ErrInvalidInput, path)
		}
		return data, false, err
	case !mode.IsRegular():
		return nil, true, nil
	}
	if isFilterFile(path) {
		return nil, true, nil
	}
	data, err = os.ReadFile(path)
	return data, false, err
}

// exportStream opens an export for import: a path or "-" for standard input,
// binary or base64, streamed. What is not an export is refused before
// anything is made, saying what it is where it can: a filter file or a
// frozen export, which import cannot read, is a likely mistake.
func exportStream(path string, stdin io.Reader) (io.Reader, int64, func() error, error) {
	in, size, closer := stdin, int64(-1), func() error { return nil }
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return nil, 0, nil, err
		}
		if info, err := file.Stat(); err == nil && info.Mode().IsRegular() {
			size = info.Size()
		}
		in, closer = file, file.Close
	}
	stream := decoded(in)
	head, _ := stream.Peek(len(engine.ExportMagic))
	if err := notExport(path, head); err != nil {
		_ = closer()
		return nil, 0, nil, err
	}
	return stream, size, closer, nil
}

// decoded reads r as it is or, if r starts as base64, what it encodes:
// export --base64 writes URL-safe base64 without padding, other tools the
// standard alphabet with it, either perhaps broken into lines.
func decoded(r io.Reader) *bufio.Reader {
	stream := bufio.NewReader(r)
	head, _ := stream.Peek(sniffBytes)
	if !startsAs(head, engine.ExportMagic) && !startsAs(head, engine.Magic) && looksBase64(head) {
		stream = bufio.NewReader(base64.NewDecoder(base64.RawURLEncoding, urlSafe{stream}))
	}
	return stream
}

// urlSafe reads base64 of either alphabet, padded or not (export writes
// URL-safe without padding; other tools write the standard alphabet with
// it), as URL-safe without padding. Spaces and tabs, which an editor may
// leave, are dropped; the decoder itself skips line breaks.
type urlSafe struct{ r io.Reader }

func (u urlSafe) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	kept := p[:0]
	for _, c := range p[:n] {
		switch c {
		case '+':
			kept = append(kept, '-')
		case '/':
			kept = append(kept, '_')
		case '=', ' ', '\t':
		default:
			kept = append(kept, c)
		}
	}
	return len(kept), err
}

// sniffBytes is how much of a stream exportStream reads to tell binary from
// base64.
const sniffBytes = 64

// notExport says what a stream that starts with head is, if not an export.
func notExport(path string, head []byte) error {
	switch kind(head) {
	case anExport:
		return nil
	case aFilterFile:
		return fmt.Errorf("%w: %s is a filter file, not an export: import reads what export writes (tallybloom export FILE OUT)", engine.ErrInvalidInput, path)
	case aFrozenExport:
		return fmt.Errorf("%w: %s is a frozen export, one bit a counter, which cannot become a filter file again: export without --frozen", engine.ErrInvalidInput, path)
	}
	return fmt.Errorf("%w: %s is not a tallybloom export, binary or base64", engine.ErrNotFilter, path)
}

// What a file or stream holds, by its first bytes.
const (
	aFilterFile   = "a filter file"
	anExport      = "an export"
	aFrozenExport = "a frozen export"
)

// kind is what a stream that starts with head (decoded, if it was base64)
// holds, or "" if none of the three.
func kind(head []byte) string {
	switch {
	case startsAs(head, engine.Magic):
		return aFilterFile
	case startsAs(head, engine.ExportMagic):
		return anExport
	case startsAs(head, engine.FrozenMagic) && len(head) > len(engine.FrozenMagic) && head[len(engine.FrozenMagic)] == engine.FrozenVersion:
		return aFrozenExport
	}
	return ""
}

// openFilter is engine.Open, saying so when path is an export: check
// reads exports as they are, so giving one to a command that needs a filter
// file is a likely mistake.
func openFilter(path string, opts *engine.Options) (*engine.Filter, error) {
	f, err := engine.Open(path, opts)
	switch {
	case errors.Is(err, engine.ErrNotFilter):
		err = withExportHint(path, err)
	case errors.Is(err, engine.ErrUnclean):
		err = withUncleanHint(path, err)
	}
	return f, err
}

// withUncleanHint adds to err, which says the machine crashed before path's
// latest changes were flushed, what to do: a file some of whose changes
// may be lost cannot be trusted, and is made again, from a copy or from
// its keys into a filter of its parameters (with a seed of its own).
func withUncleanHint(path string, err error) error {
	remake := "its keys"
	if unclean, ok := errors.AsType[*engine.UncleanError](err); ok {
		c := unclean.Config
		remake = fmt.Sprintf("its keys into a filter made as it was (tallybloom create NEW --capacity %d --error-rate %g --tightening %g --growth %g", c.Capacity, c.ErrorRate, c.Tightening, c.Growth)
		if c.Fixed {
			remake += " --fixed"
		}
		if c.CountersOnly {
			remake += " --counters-only"
		}
		remake += ")"
	}
	return fmt.Errorf("%w; the machine stopped before they were flushed: make %s again from a copy (tallybloom mirror pull %s --replace --redis URL --name NAME, or tallybloom import EXPORT %s --replace), or from %s", err, path, path, path, remake)
}

// withExportHint adds to err, which says path is not a filter, what path is
// if it is an export, binary or base64.
func withExportHint(path string, err error) error {
	file, openErr := os.Open(path)
	if openErr != nil {
		return err
	}
	defer file.Close()
	head, _ := decoded(file).Peek(len(engine.ExportMagic))
	switch kind(head) {
	case anExport:
		return fmt.Errorf("%w; it is an export: tallybloom import %s FILE makes a filter file of it", err, path)
	case aFrozenExport:
		return fmt.Errorf("%w; it is a frozen export, which only check reads", err)
	}
	return err
}

func startsAs(head []byte, magic string) bool { return bytes.HasPrefix(head, []byte(magic)) }

// looksBase64 reports whether head is all base64 (either alphabet) or
// white space, as export --base64 writes it.
func looksBase64(head []byte) bool {
	for _, c := range head {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-', c == '_', c == '+', c == '/', c == '=', c == '\n', c == '\r', c == ' ', c == '\t':
		default:
			return false
		}
	}
	return len(head) > 0
}
