//go:build !amd64 && !arm64

package prefetch

import "unsafe"

// Line does nothing on this architecture: the package has no prefetch
// instruction for it, and a load in its place could fault where a
// prefetch would not.
func Line(addr unsafe.Pointer) {}
