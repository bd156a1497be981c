//go:build !unix

package mmapfile

func adviseRandom([]byte) {}

func allocated(f *File) (int64, error) { return f.Size() }

// vacate cannot map over a mapping in place here: Vacate unmaps instead.
func vacate([]byte) error { return ErrUnsupported }
