//go:build !unix && !windows

package flock

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

func lock(*os.File) error {
	return fmt.Errorf("flock: file locks on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func unlock(*os.File) error { return nil }

// named is never asked where files cannot be locked.
func named(*os.File) bool { return true }

// removeLocked is never asked where files cannot be locked.
func removeLocked(file *os.File) { _ = file.Close() }
