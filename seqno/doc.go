// Package seqno keeps the change sequence numbers, the dirty marker and the
// undo record that make a restart exact.
//
// Two small areas of the file's header belong to this package:
//
//   - The state ([State]): whether changes were made since the last flush, the
//     last durable sequence, and the boot that made them. It is written only when
//     the file goes dirty and when it is flushed, and each write is synced.
//     Its area ([StateArea]) holds it twice, so that a process killed while
//     it rewrites the state leaves one copy whole.
//   - The journal ([Journal]): the memory sequence, bumped by every committed
//     change, and the undo record of the change in flight: the prior content
//     of every byte span that change writes.
//
// # Protocol
//
// A change is: [Journal.Begin], [Journal.Save] of each span it will write,
// [Journal.Seal], the writes themselves, [Journal.Commit]. Seal stores the
// record's sequence (memory sequence + 1) last, after the rest of the record,
// so a record whose sequence is one past the memory sequence is whole. After a
// process is killed, the page cache holds every store it made in program
// order, so [Journal.Pending] finds the change in flight, if any, and its
// spans put back the bytes it may have written.
//
// After a machine crash the page cache is gone and any subset of pages may
// have reached the disk; only the state can say whether that matters (see
// [State.Outcome]).
//
// # Concurrency
//
// One goroutine (the writer) calls Begin, Save, Seal and Commit; MemSeq may be
// read from any goroutine or process. The sequences are stored with release
// order (internal/release), which is all the protocol needs: the record
// before its sequence, the change's writes before the commit.
package seqno
