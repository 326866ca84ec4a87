//go:build !race

package doctest

// raceEnabled: the tests run without the race detector.
const raceEnabled = false
