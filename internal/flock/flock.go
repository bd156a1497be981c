package flock

import (
	"os"
	"path/filepath"
	"strings"
)

// Lock takes an exclusive lock on file without waiting. It goes with the
// file's Close, or with Unlock.
func Lock(file *os.File) error { return lock(file) }

// Unlock releases the lock Lock took.
func Unlock(file *os.File) error { return unlock(file) }

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
