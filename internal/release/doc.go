// Package release stores words of shared memory with release order: every
// load and store that comes before a store in program order is visible to
// another core or process before it.
//
// A change to a filter has one writer (the engine's mutex in a process, its
// file lock across processes) and readers that only load. Readers need the
// writer's stores in the order it made them, and a process killed midway
// must leave a prefix of them in the page cache; that is what the undo
// record's seal and commit rely on. Neither needs the sequential consistency
// of sync/atomic's stores, which on amd64 are a locked exchange, costing
// about as much as the rest of a counter's update: an add makes a dozen such
// stores. On amd64 every aligned 8-byte store already has release order, so
// [Store64] is one plain move there, in assembly, where the Go compiler keeps
// it in program order. Elsewhere, and under the race detector, it is
// sync/atomic's store, so that `go test -race` sees every write as atomic.
//
// Readers load with sync/atomic.
//
// # Concurrency
//
// [Store64] may be called from any goroutine. [Add64] is for a word that one
// goroutine alone writes: it is a load and a store, not one atomic step.
package release
