//go:build !race

package faults

// raceDetector is false: see race.go.
const raceDetector = false
