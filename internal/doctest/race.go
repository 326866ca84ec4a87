//go:build race

package doctest

// raceEnabled: the tests run with the race detector, and the examples'
// binary is built with it too, from the same compiled packages.
const raceEnabled = true
