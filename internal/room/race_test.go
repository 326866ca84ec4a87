//go:build race

package room

// raceEnabled: the race detector is on (sync.Pool then drops items at random).
const raceEnabled = true
