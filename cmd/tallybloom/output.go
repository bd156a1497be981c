package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/internal/dirsync"
	"github.com/tallybloom/tallybloom/internal/flock"
)

// output is a file a command writes whole or not at all. A regular file
// (or a name not yet taken) is written beside its name and renamed over it
// once synced, so that a reader, or a crash, finds the old content or the
// new, never part of one; a device or a pipe is written in place. A
// command interrupted (SIGINT, SIGTERM) before the rename removes the file
// beside the name as it exits.
type output struct {
	file    *os.File // set under mu by createBeside, then only read
	path    string   // the name the command was given
	final   string   // where the file is renamed to; "" when written in place
	locked  bool     // file is locked (see createBeside)
	signals chan os.Signal
	mu      struct {
		sync.Mutex
		ended bool // committed or aborted
	}
}

// createOutput opens path for a command that read source. It refuses to
// write over a filter file: source itself, which the command has mapped,
// or another, which a process may have mapped and which would be lost.
func createOutput(path, source string) (*output, error) {
	if path == "" {
		// The working directory, "." to EvalSymlinks, is not what was meant.
		return nil, fmt.Errorf("%w: OUT is an empty path", engine.ErrInvalidInput)
	}
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	info, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return createBeside(path, target, 0o666, false)
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		file, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &output{file: file}, nil
	}
	if from, err := os.Stat(source); err == nil && os.SameFile(info, from) {
		return nil, fmt.Errorf("%w: %s is FILE itself: write the copy elsewhere", engine.ErrInvalidInput, path)
	}
	if isFilterFile(target) {
		return nil, fmt.Errorf("%w: %s is a filter file, which this will not write over: remove it first, or write elsewhere", engine.ErrInvalidInput, path)
	}
	return createBeside(path, target, info.Mode().Perm(), true)
}

// createBeside creates a new file in target's directory that commit renames
// to target, with mode perm: less the umask for a new name, whole where it
// keeps the mode of the file it replaces.
//
// The file is locked until it is renamed (see internal/flock), so that a
// later output to the same name removes the files that commands killed
// outright (SIGKILL, a crash) left beside it, and leaves those of commands
// still writing.
func createBeside(path, target string, perm fs.FileMode, keep bool) (*output, error) {
	o := &output{path: path, final: target, signals: make(chan os.Signal, 1)}
	// Signals are watched before the file exists, and the file is made
	// under the lock the watcher takes, so that no signal finds it made
	// and not yet watched for.
	o.mu.Lock()
	defer o.mu.Unlock()
	signal.Notify(o.signals, syscall.SIGINT, syscall.SIGTERM)
	go o.removeOnSignal()
	dir, base := filepath.Split(target)
	prefix := filepath.Join(dir, "."+base+".writing-")
	flock.RemoveUnlocked(prefix)
	file, locked, err := makeBeside(prefix, perm)
	if err != nil {
		o.endLocked()
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	o.file, o.locked = file, locked
	if keep {
		// The umask may have taken bits the replaced file's mode had.
		if err := file.Chmod(perm); err != nil {
			o.endLocked()
			file.Close()
			os.Remove(file.Name())
			return nil, err
		}
	}
	return o, nil
}

// openBeside makes the files outputs write beside their names. Tests
// replace it to act in the instant after a file is made.
var openBeside = os.OpenFile

// makeBeside makes a file named prefix and random letters, with mode perm,
// and locks it (see flock.Make). Where the file cannot be locked it is
// written all the same: a later output cannot lock it either, and so
// leaves it.
func makeBeside(prefix string, perm fs.FileMode) (*os.File, bool, error) {
	file, locked, err := flock.Make(prefix, func(name string) (*os.File, error) {
		return openBeside(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	})
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		err = pathErr.Err // the error is of the output's name, not of the one beside it
	case errors.Is(err, flock.ErrTaken):
		err = fmt.Errorf("%w: other commands writing the same name: %w", engine.ErrLocked, err)
	}
	return file, locked, err
}

// removeOnSignal waits for a signal to interrupt the command and, unless
// the output was committed or aborted first, removes the file beside its
// name and exits as the signal asks. It holds the lock to the end, so that
// the command cannot rename the file away meanwhile.
func (o *output) removeOnSignal() {
	sig, ok := (<-o.signals).(syscall.Signal)
	if !ok {
		return // ended: the channel is closed
	}
	o.mu.Lock()
	if o.mu.ended {
		// Committed: the command ends as if the signal had come after.
		o.mu.Unlock()
		return
	}
	os.Remove(o.file.Name())
	os.Exit(exitStatus(os.Stderr, &exitCode{code: 128 + int(sig), err: fmt.Errorf("%w: %s left as it was", errStopped, o.path)}))
}

// endLocked marks the output ended and stops watching for signals.
func (o *output) endLocked() {
	o.mu.ended = true
	if o.signals != nil {
		signal.Stop(o.signals)
		close(o.signals)
	}
}

// isFilterFile reports whether the file at path starts with a filter file's
// magic number.
func isFilterFile(path string) bool {
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	head := make([]byte, len(engine.Magic))
	_, err = io.ReadFull(file, head)
	return err == nil && string(head) == engine.Magic
}

func (o *output) Write(p []byte) (int, error) { return o.file.Write(p) }

// commit makes what was written the content of the output's name. The
// file beside the name is synced before the lock is taken, so that a
// signal while it syncs (seconds, for a large copy) still removes it and
// ends the command, as a signal before the sync does. Signals are watched
// until the rename is done: one that comes once commit holds the lock
// waits for the rename, then finds the output committed.
func (o *output) commit() error {
	if o.final == "" {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.endLocked()
		return o.file.Close()
	}
	syncErr := syncBeside(o.file)
	o.mu.Lock()
	defer o.mu.Unlock()
	defer o.endLocked()
	name := o.file.Name()
	err := syncErr
	if o.locked {
		// Renamed while its lock is held, so that no export starting
		// meanwhile takes the copy for a dead one's and removes it.
		if err == nil {
			err = os.Rename(name, o.final)
		}
		err = errors.Join(err, o.file.Close())
	} else {
		// Without a lock (no file locks here), closed first: some systems
		// cannot rename a file that is open.
		if err = errors.Join(err, o.file.Close()); err == nil {
			err = os.Rename(name, o.final)
		}
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	return dirsync.Of(o.final)
}

// syncBeside syncs the file an output writes beside its name. Tests
// replace it to act while a commit syncs.
var syncBeside = (*os.File).Sync

// abort leaves the output's name as it was, for a command that failed; after
// commit it does nothing.
func (o *output) abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mu.ended {
		return
	}
	o.endLocked()
	o.file.Close()
	if o.final != "" {
		os.Remove(o.file.Name())
	}
}
