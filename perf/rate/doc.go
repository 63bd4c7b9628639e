// Package rate is the rate scenario: 100 B RPCs per second with 256
// outstanding, four worker goroutines with sessions of their own against
// TCP with a connection per outstanding RPC, CPU seconds per million RPCs
// (the workers in rate_homa.go, the coordinator in rate_run.go, TCP in
// rate_tcp.go); and the daemon's RSS with 10,000 RPCs held outstanding,
// which the demo's config refuses (the run says which bounds) and a second
// daemon, those bounds raised, holds (rate_limits.go).
package rate
