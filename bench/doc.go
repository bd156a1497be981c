// Package bench measures tallybloom against the filters a user would pick
// instead, side by side in one run: bits-and-blooms/bloom (the default Go
// Bloom filter), BoomFilters' counting and scalable filters, blobloom (a
// blocked filter, the physical limit of one cache line per lookup), and, in
// builds with the dablooms tag and cgo, bitly's dablooms, the C library
// tallybloom succeeds (see package dablooms; cmd/report builds it).
//
// It is a module of its own so that the peers never enter tallybloom's
// go.mod. The benchmarks are in bench_test.go; cmd/report runs them and
// writes RESULTS.md, with go test's output beside it in RESULTS.txt,
// from which -from writes the report again.
//
// Sizes come from the -sizes flag: "ci", the default (filters of 20K and
// 100K keys, labelled so, to see nothing is broken),
// "short" (1M, and 64M-key filters filled with 8M keys: under five minutes
// on two cores) or "full" (1M and 64M, filled). At 64M a benchmark cycles
// through 4M keys, so that the lines it touches are far more than any
// cache holds; at the smaller sizes through 65 536. ContainsSideBySide
// times 64M lookups in blocks that alternate between each tallybloom way
// and bits-and-blooms, so that both meet the same moments of a shared
// machine.
package bench
