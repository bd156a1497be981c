// Package fuzz holds tallybloom's end-to-end fuzz harnesses; it has no code
// of its own outside its tests. They use the engine's public API only:
//
//   - FuzzOpen opens arbitrary and mutated files, for writing and read-only,
//     and uses what opens: never a panic, every error one of the engine's
//     sentinels.
//   - FuzzOperations runs arbitrary operation sequences against an exact
//     model of the keys held.
//
// `go test ./fuzz` runs the seeds (in the code and under testdata/fuzz);
// fuzz longer with, for example,
//
//	go test ./fuzz -run '^$' -fuzz FuzzOpen -fuzztime 10m -fuzzminimizetime 10x
//
// (files are tens of kilobytes, and minimizing each new input for the
// default minute would take most of the run), and keep any crasher it writes
// under testdata/fuzz as a regression seed.
package fuzz
