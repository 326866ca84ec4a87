//go:build !race

package chaostest

const raceEnabled = false
