// Package flock takes the exclusive, advisory file locks that tell a file
// some process is working on from one whose process died: the writer's
// lock on a filter file, and the lock on a file a process builds beside
// its final name (.NAME.creating-..., .NAME.writing-...) until it renames
// it there. The system drops a lock when its process dies, however it
// dies, so a file built beside a name that nobody holds locked was left by
// a process that is gone, and RemoveUnlocked removes such files.
//
// Locks are flock(2) locks on Unix, and on Windows a LockFileEx lock of a
// byte past any file's end. Elsewhere Lock reports errors.ErrUnsupported
// and RemoveUnlocked removes nothing, as it cannot tell a live file from a
// dead one. Holder names the process holding a
// file's lock where the system lists lock holders (/proc/locks on Linux),
// so that a refused writer can be told who has the file.
package flock
