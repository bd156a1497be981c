// Package mirror keeps a copy of a tallybloom filter in Redis (or Valkey),
// so that processes on other machines can check keys against one shared
// copy, and a new machine can get a filter without rebuilding it.
//
// # Layout
//
// Every key of a filter named N carries the hash tag {N}, so all of them
// live in one slot of a Redis Cluster and one script can touch them all:
//
//	{N}:meta            hash: format, gen, seq, config, part, dir, t:<level>
//	{N}:g<gen>:l<L>:p<P> part P of the counters of the sub-filter at level L
//	{N}:pending         hash: the copy being written, shaped as meta
//	{N}:gens            the last generation handed to a copy
//	{N}:owner           the claim of the process that writes copies
//	{N}:hold            "<ms> <token>": when a reader took its hold on the
//	                    live copy, by Redis's clock, and its token; "!"
//	                    before it once the writer cut it (Options.MaxHold)
//
// The counter strings hold the file's counter bytes unchanged (Redis
// BITFIELD u4 order), split into parts of at most Options.PartBytes (below
// Redis's 512 MB string limit). gen names the live copy; seq is the
// sequence of the last change it holds. The layout is Format, named in the
// meta hash's format field; TestRedisLayoutIsPinned pins it by the SHA-256
// of a copy made from fixed parameters and keys, so that a change to it
// comes with a new Format.
//
// The batch that ships a change opening a sub-filter makes its parts one
// zero byte long, and the mirror then fills each to its length with a
// call of its own, before the batch counts as held: Redis is held for one
// part's zeroing at a time, never for a whole new sub-filter's, which for
// a sub-filter of gigabytes would take seconds. Until filled, a part reads
// as zeros past its end, which it is. A part that is gone, evicted by a
// Redis whose maxmemory-policy evicts keys without an expiry or deleted
// by hand, is never read as zeros: checks return ErrPartLost, and a batch
// that would write into it writes nothing and makes the mirror write a
// full copy. Run Redis with maxmemory-policy noeviction, or a volatile-
// policy: the copy's keys have no expiry. Give it a maxmemory with room
// for the filter's counters twice, since a full copy is written beside
// the live one until it replaces it. Short of room, Redis refuses the
// writer's writes (ErrRedisFull): Push returns it, a Mirror shows it in
// Stats.LastError and catches up once there is room, and checkers, whose
// script writes nothing, read the live copy meanwhile.
//
// # Shipping
//
// A Mirror attached to an engine.Filter receives every committed change
// through Filter.OnCommit and queues it (bounded); the filter never waits
// for Redis. A filter may have several mirrors, into several Redis
// deployments or under several names, each with its own subscription,
// queue and claim. A goroutine ships the queue in batches through a script that
// applies a batch only if Redis's sequence is the one the batch follows, so
// a resent batch is never applied twice and none is skipped. Changes carry
// the new bytes of the counters they wrote, so sticky saturation holds in
// Redis as in the file; as a batch is applied whole, only the last bytes of
// a block and the last tallies of a sub-filter within it are sent. When
// Redis lost its copy, fell behind the queue's bound, or holds another copy,
// the mirror writes a full copy under a new generation and switches to it in
// one script: checkers, which read through a script that checks the
// generation, see the old copy or the new, never a mix.
//
// A full copy starts from the filter's Stats, taken between two changes,
// and reads the counters a piece at a time with Filter.CopyCounters, so the
// filter waits for a piece at most and memory holds one chunk. A piece may
// hold changes made after the copy started. While the copy is written the
// mirror does not queue changes: it marks the 64-byte blocks they touch,
// one bit a block. The copy then catches up in rounds: each reads the
// blocks marked since the last one again (Filter.CopySpans) and writes them
// into the pending copy, until few are left. The last round reads those
// under one hold of the filter's lock, exact at its sequence, and writes
// them after the few changes queued between taking them and reading them;
// it sets the tallies and directory of that moment. Only then does the
// switch rename the pending hash to the meta hash, so the copy that
// becomes live is exact at its sequence. A round whose sub-filters changed
// under it (a level retired and opened again goes to a new sub-filter) is
// made again, the copy's level zeroed first. A copy is written again if a
// sub-filter it was first reading was retired.
//
// When the queue gives up on changes (Redis away longer than it holds),
// the mirror marks the blocks of those changes and of every one after, and
// if Redis still holds its copy, the next copy starts from that one, cloned
// part by part inside Redis (COPY, Redis 6.2 or later), and catches up the
// same way: only the changed blocks are sent. A Redis that lost the copy,
// or has no COPY, gets it in full.
//
// A failed call is made again
// until Redis answers or the mirror closes, so an outage does not make a
// copy start over; every write checks that the pending copy is still the
// one being written, so a copy Redis lost, or another replaced, stops at
// its next write.
//
// A copy records its keys in the pending hash before it writes them; a
// copy that never became live is deleted by the next one.
//
// One process writes a name's copies at a time: every script that writes
// first claims the name ({N}:owner) for its writer's token, for
// Options.ClaimTTL after the call, or refuses with ErrNameTaken. An idle Mirror
// renews its claim, and Close gives it up; so does a Pusher, which holds
// the name between the copies it pushes, where Push holds it only while
// it runs. A second writer of the name
// waits until the holder closes or its claim expires; without this, two
// mirrors of different files under one name would each find the other's
// copy live and copy in full again, for ever. Should two copies meet all
// the same (a writer away from Redis for the claim's time, and another
// that took the name meanwhile), every copy takes a generation no copy had
// (from {N}:gens), so they never write the same parts: the copy whose
// pending hash the other replaced finds out at its next write, deletes its
// parts and waits.
//
// # Reading
//
// Checkers, Pull and Restore read through a script that checks the
// generation, so what they read is of one copy: a read that finds another
// copy live starts again. A checker's script also checks the directory it
// places keys by, and reads it again when sub-filters were opened or
// retired since. Pull and Restore, which read a copy of more than 8 MiB of
// counters in many calls, check the sequence, so that what they return is
// the copy at one change; a change shipped meanwhile sends them back to
// the start. A smaller copy they read in one call. Restore hands the copy
// to engine.Import as an export stream written a chunk at a time
// (engine.WriteExport), so it never holds the filter in memory.
//
// A writer that never pauses for as long as such a read takes would send
// it back every time, so from its third read a reader holds the copy: it
// sets {N}:hold to a token of its own, for a few seconds that it renews
// as it reads, and deletes it when it is done. While the hold exists, the
// script that ships a batch applies nothing and answers HELD, and the
// Mirror keeps its changes queued (Stats.Held) and asks again; a full
// copy's switch waits the same way, so the live copy stays at one
// sequence to the end of the read. A reader that dies leaves its hold to
// expire; a Redis that does not take a hold (a replica, one out of
// memory, a user its ACL lets only read) is read without one. A hold
// holds the writer back for as long as the read takes, and changes made
// meanwhile wait in its queue, or, past the queue's bound, in the blocks
// it marks for the next copy; Describe and tallybloom mirror stats name
// the reader. The writer waits for one hold for Options.MaxHold at most
// (a minute by default), by Redis's clock from the moment the hold was
// taken: then it cuts the hold and ships, so that the copy checkers read
// is never older than that for a reader's sake. The reader's read fails
// with ErrCopyChanging, and for MaxHold after a cut (and as long as the
// hold would have lasted, if that is longer) no reader holds the copy
// (Stats.HoldsCut counts the cuts; Describe and mirror stats say how long
// a reader has held the copy, and whose hold was cut). The key is new in this format
// and changes no byte of a copy: a writer built before it ignores a hold,
// and a reader built before it takes none.
//
// # Concurrency
//
// A Mirror's methods and a Checker's may be called from any goroutine.
package mirror
