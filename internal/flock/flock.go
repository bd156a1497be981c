package flock

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Lock takes an exclusive lock on file without waiting. It goes with the
// file's Close, or with Unlock.
func Lock(file *os.File) error { return lock(file) }

// Unlock releases the lock Lock took.
func Unlock(file *os.File) error { return unlock(file) }

// Make makes a file named prefix and random letters with open, which must
// create it exclusively (os.O_EXCL), and locks it. In the instant between
// the making and the lock, another process's RemoveUnlocked can take the
// file for one a dead process left and remove it; Make then makes another,
// up to ClaimAttempts, and after that fails with ErrTaken. An error of
// open's is returned as it is. The bool reports whether the file is
// locked: where files cannot be locked nothing removes them, and the file
// is returned unlocked.
func Make(prefix string, open func(name string) (*os.File, error)) (*os.File, bool, error) {
	for range ClaimAttempts {
		file, err := open(prefix + rand.Text())
		if err != nil {
			return nil, false, err
		}
		if claimed, locked, _ := claim(file); claimed {
			return file, locked, nil
		}
		_ = file.Close()
	}
	return nil, false, fmt.Errorf("%w: %d files in a row", ErrTaken, ClaimAttempts)
}

// claim locks file, just made under a new name, and reports whether the
// name is still the file's: false when it finds the lock held (another
// process's RemoveUnlocked is removing the file) or the file without a
// name (it was removed). Where files cannot be locked (claim's error) the
// file is claimed unlocked.
func claim(file *os.File) (claimed, locked bool, err error) {
	switch err := lock(file); {
	case errors.Is(err, ErrHeld):
		return false, false, nil
	case err != nil:
		return true, false, err
	}
	if named(file) {
		return true, true, nil
	}
	return false, false, unlock(file)
}

// ClaimAttempts is how many files Make makes before it gives up when every
// one is taken: each needs another process cleaning up in its instant, so
// more than one is already rare.
const ClaimAttempts = 8

// RemoveUnlocked removes the regular files in prefix's directory whose
// paths start with prefix and whose lock no process holds: files that
// processes which died left behind. A file that cannot be opened or locked
// stays.
func RemoveUnlocked(prefix string) {
	dir := filepath.Dir(prefix)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := filepath.Join(dir, e.Name())
		if !strings.HasPrefix(name, prefix) || !e.Type().IsRegular() {
			continue
		}
		file, err := os.Open(name)
		if err != nil {
			continue
		}
		if lock(file) == nil {
			removeLocked(file)
		} else {
			_ = file.Close()
		}
	}
}
