// Package workload holds the message-size distributions of the Homa
// papers, W1-W5 (testdata/w1.csv..w5.csv, embedded), draws sizes and
// Poisson arrivals from them and groups samples into size buckets: the
// slowdown and cluster scenarios' traffic.
package workload
