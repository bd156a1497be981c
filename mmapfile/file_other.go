//go:build !unix

package mmapfile

func adviseRandom([]byte) {}

func allocated(f *File) (int64, error) { return f.Size() }
