// Package homapeer is how the perf harness runs Homa: the daemon as a
// child process (`homa-dpdk demo --workers DIR`) with its two hosts on a
// link, joined directly or through dpdk-testpmd (links.go); a pair of
// workers attached to it over shared memory (pair.go); streams of messages
// in windows, with the wall and CPU time they take (stream.go); and the
// CPUs the harness keeps off the daemon's polling loop (affinity.go).
package homapeer
