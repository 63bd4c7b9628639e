// Package workload is the traffic model of the Homa papers below the
// engine: the message-size distributions W1-W5 (testdata/w1.csv..w5.csv,
// embedded), sizes and open-loop Poisson arrivals drawn from them, size
// buckets for the samples, and the AI mix (ai.go: ring all-reduces,
// all-to-all rounds, background messages and small RPCs of a training
// cluster). It imports only wire, so that the
// engine's own simulations (engine's tests on memnet), perf cluster's
// simulated cluster and perf slowdown's real daemons offer the same
// traffic.
package workload
