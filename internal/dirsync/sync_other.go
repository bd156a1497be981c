//go:build !windows

package dirsync

import "os"

func syncDir(dir *os.File) error { return dir.Sync() }
