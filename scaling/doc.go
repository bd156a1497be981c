// Package scaling is the chain of counting sub-filters: the tightening of
// error rates, the growth of capacities, the routing of adds and removes by
// id, and the retirement of old sub-filters. Storage is reached through the
// small [Storage] interface, so the chain runs the same over a mapped file and
// over memory.
//
// # Levels
//
// Every retained sub-filter holds a distinct level L. A sub-filter at level L
// is built for Capacity*Growth^L keys at error rate ErrorRate*(1-r)*r^L, r the
// tightening ratio. Distinct levels make the rates of the retained sub-filters
// sum to less than ErrorRate however many there are, and a new sub-filter
// takes the lowest free level, so retiring old sub-filters keeps the chain
// small instead of tightening for ever.
//
// # Routing
//
// Each sub-filter owns the ids from its FirstID up to the next sub-filter's
// FirstID; the newest owns every id from its FirstID on. An add goes to the
// owner of its id. When the owner is the newest and it is full, a new
// sub-filter opens with the add's id as its FirstID, but only if that id is
// greater than every id the newest holds; otherwise the newest is overfilled.
// A remove is routed the same way, so it must carry the id of its add. A
// fixed chain (Params.Fixed) keeps its one sub-filter, built for the whole
// error rate, and overfills it instead of growing.
//
// # Concurrency
//
// Changes (Add, Remove, TestAndAdd, DropBefore) are serialized by the caller,
// and are the only writers of the tallies, which they update with a load and
// a release store (internal/release) rather than a locked add. Contains and
// SubFilters may run at any time from any goroutine: they read an immutable
// snapshot of the chain and take no lock.
package scaling
