//go:build amd64 && !race

package release

// Store64 stores val at addr, which must be 8-byte aligned, with release
// order. It is one move (see store_amd64.s).
//
//go:noescape
func Store64(addr *uint64, val uint64)
