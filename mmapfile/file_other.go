//go:build !unix

package mmapfile

import (
	"fmt"
	"runtime"
)

func lock(*File) error {
	return fmt.Errorf("%w: file locks on %s", ErrUnsupported, runtime.GOOS)
}

func unlock(*File) error { return nil }

func adviseRandom([]byte) {}

func allocated(f *File) (int64, error) { return f.Size() }
