// Package throughput is the throughput scenario: 512 KiB (NCCL's shape),
// 1 MB, 8 MB and 64 MB messages streamed (windows 8, 4, 4 and 2;
// --smoke: 1 MB) from a client
// worker to a server worker through the daemon, on each link, and over
// kernel TCP; Gbps and CPU seconds per GB, and the ratios Homa over TCP
// per size. The Homa streams themselves are homapeer.HomaStream, which
// the floor scenario runs too.
package throughput
