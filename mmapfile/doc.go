// Package mmapfile is a file mapped into memory in page-aligned regions.
//
// Each region is its own mapping, so growing the file maps new regions and never
// moves an existing one: a pointer into a region stays valid until that region
// is unmapped. Room is reserved on disk before it is mapped, so a full disk is an
// error from [File.Reserve], not a fault on first touch.
//
// Unix systems and Windows are supported. Windows maps a file only from
// multiples of 64 KiB, so a region's mapping starts at the multiple below
// it, and renames over no open file ([ReplacesOpenFiles]). Elsewhere files
// can be mapped, but [File.Lock] reports [ErrUnsupported], so only
// read-only use works there.
//
// # Concurrency
//
// A File's methods may be called from several goroutines, but the caller
// orders growth, release and unmapping against the use of the regions: the
// package reads and writes no mapped byte itself. [Region.Vacate] is for a
// region readers may still be inside: on Unix they read zeros from then on.
package mmapfile
