//go:build !race

package engine

// raceDetector: see race_test.go.
const raceDetector = false
