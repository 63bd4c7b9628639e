// Package procstat reads what the perf harness takes from /proc: a
// process's CPU time, page faults and context switches, and how its worker
// regions are mapped (hugepages or not).
package procstat
