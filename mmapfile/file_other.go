//go:build !unix

package mmapfile

func adviseRandom([]byte) {}

func allocated(f *File) (int64, error) { return f.Size() }

// vacate cannot map over a mapping in place here: Vacate unmaps instead.
func vacate([]byte) error { return ErrUnsupported }

// mapBoundary is what mappings start at a multiple of: Windows maps a view
// of a file only from a multiple of its allocation granularity, 64 KiB on
// every version and processor (MapViewOfFile), and larger than a page.
func mapBoundary() int64 { return 64 << 10 }
