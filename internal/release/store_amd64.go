//go:build amd64 && !race

package release

// Store64 stores val at addr, which must be 8-byte aligned, with release
// order. It is one move (see store_amd64.s).
//
//go:noescape
func Store64(addr *uint64, val uint64)

// StoreBlock stores src's eight words at dst, which must be 8-byte aligned,
// each with release order, first to last. It is eight moves in one call
// (see store_amd64.s).
//
//go:noescape
func StoreBlock(dst, src *[8]uint64)
