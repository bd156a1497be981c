package flock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Lock takes an exclusive lock on file without waiting. It goes with the
// file's Close, or with Unlock.
func Lock(file *os.File) error { return lock(file) }

// Unlock releases the lock Lock took.
func Unlock(file *os.File) error { return unlock(file) }

// Claim locks file, which its caller has just made under a new name beside
// a final one, and reports whether the name is still the file's. In the
// instant between the making and the lock, another process's
// RemoveUnlocked can take the file for one a dead process left and remove
// it: Claim then finds the lock held (that process is removing the file)
// or the file without a name, and reports false, and the caller closes it
// and makes another. locked reports whether the lock is held: where files
// cannot be locked (Claim's error) nothing removes them, and the file is
// claimed unlocked.
func Claim(file *os.File) (claimed, locked bool, err error) {
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

// ClaimAttempts is how many files a caller makes before it gives up when
// every one is taken (see Claim): each needs another process cleaning up
// in its instant, so more than one is already rare.
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
			_ = os.Remove(name)
		}
		_ = file.Close()
	}
}
