//go:build amd64 || arm64

package prefetch

import "unsafe"

// Line asks for the cache line at addr, into every level of the cache, and
// returns without waiting for it. addr may be anything: an address with
// nothing mapped there is ignored.
//
//go:noescape
func Line(addr unsafe.Pointer)
