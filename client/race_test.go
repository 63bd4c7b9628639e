//go:build race

package client

// raceEnabled shortens the long tests under the race detector, which
// slows them tenfold, and skips the allocation count, which it changes.
const raceEnabled = true
