// Package engine is tallybloom's public API: a scalable counting Bloom filter
// kept in a memory-mapped file.
//
// A filter is a chain of counting sub-filters with 4-bit counters. Every add
// carries an id that grows over time (an insertion timestamp, a sequence
// number); each sub-filter owns a range of ids, so old entries expire in
// constant time with DropBefore, and a remove, given the id of its add, finds
// the sub-filter that holds the key. The chain's false-positive rate stays at
// or below Config.ErrorRate however far it grows.
//
// The file is the filter: Open maps it and is ready, at a cost that does not
// grow with the filter. Every change has a sequence number; after a process
// is killed mid-change, Open undoes the change in flight; after a machine
// crash with unflushed changes, Open returns ErrUnclean with the last durable
// sequence, so the caller never trusts a filter that may have lost keys.
//
// # Concurrency
//
// Within a process, any number of goroutines may call Contains,
// ContainsBatch and Stats while changes run; changes (Add, Remove,
// TestAndAdd, AddBatch, RemoveBatch, DropBefore, Flush) are serialized by a
// mutex. Contains and ContainsBatch take no lock. In the writing process,
// Stats, each 1 MiB piece of CopyCounters and each CopySpans take the mutex
// between two changes, so what they report holds whole changes; Snapshot
// takes it for all of its copy. With Options.FlushWhenIdle a goroutine of
// the filter's own flushes it, under the same mutex, once changes pause;
// Close ends it. With Options.PopulateNewSubFilters a goroutine populates
// each sub-filter the chain opens, without the mutex; Close and a
// DropBefore that retires sub-filters wait for it. On Unix, Close may run
// while lookups do: a lookup that overlaps it may miss, and none reads the
// released file; calls that begin after it return ErrClosed, or false.
// Elsewhere lookups must end before Close.
//
// Across processes, one writer holds an exclusive lock on the file (a second
// gets ErrLocked) and any number of processes may open it with
// Options.ReadOnly; they share the page cache and see the writer's adds,
// new sub-filters and retirements without reopening.
//
// # Removing keys
//
// Remove only keys that were added, with the id they were added with.
// Removing a key never added is unsafe in any counting Bloom filter: if the
// key is a false positive, its counters belong to other keys, and
// decrementing them can make those keys disappear. A counter that reached 15
// stays at 15, so no sequence of adds and removes of added keys ever causes a
// false negative.
package engine
