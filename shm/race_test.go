//go:build race

package shm

// raceEnabled shortens the long concurrency tests under the race
// detector, which slows them tenfold.
const raceEnabled = true
