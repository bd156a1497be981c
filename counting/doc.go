// Package counting is one counting Bloom filter over a counter region that the
// caller provides: the sizing math, the derivation of a key's counters from its
// hash, and 4-bit counter arithmetic. It does no I/O.
//
// # Layout
//
// The region is an array of 64-byte blocks of 128 four-bit counters. Counter i
// of the region lives in byte i/2, in the high nibble when i is even and the low
// nibble when i is odd: the order of Redis BITFIELD u4 #i, so a region can move
// byte for byte between a file and a Redis string. All k counters of a key lie in
// one block, so a lookup touches one cache line; the extra false positives of
// that choice are paid for by sizing (see [Plan]).
//
// A filter of a blocked geometry may keep presence bits beside its counters
// (see [PresenceBytes]): one bit a counter, set while the counter is
// non-zero, 16 bytes a block, in the order of the frozen form (bit i of the
// region in byte i/8, most significant bit first). Lookups read them instead
// of the counters: a quarter of the room, so at a given size far more of a
// filter stays in the cache. Changes keep them exact.
//
// # Invariants
//
//   - A key's k counters are distinct, so every add raises k counters and the
//     sum of a block's counters is k times the keys it holds until one saturates.
//   - Saturation is sticky: a counter at 15 stays at 15; adds and removes leave it.
//   - A change is all or nothing per key: [Filter.Decrement] changes nothing
//     unless every counter of the key is non-zero. After [Filter.Held] it
//     trusts what Held read, so nothing may change the filter between them.
//   - Once a change returns, a presence bit is set exactly where its counter
//     is non-zero.
//
// # Concurrency
//
// Counter words and presence bits are read with atomic loads and written
// with release stores (internal/release), or on amd64 by raiseBlock and
// lowerBlock, whose SSE2 arithmetic ends in one 8-byte move a word, in
// order: a reader sees one writer's stores in the order it made them, each
// word whole. Any number of goroutines may call
// [Filter.Contains] and [Filter.Test] while one goroutine calls
// [Filter.Increment] or [Filter.Decrement]; the caller serializes changes.
package counting
