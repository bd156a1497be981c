//go:build race

package engine

// raceDetector: the tests run under the race detector, which sees data
// races between goroutines of one process and multiplies the time of all
// else. Tests that spend seconds on one goroutine, or in child processes
// whose races it does not see, do less under it; the invariants build
// runs them whole.
const raceDetector = true
