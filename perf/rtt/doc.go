// Package rtt is the rtt scenario: one RPC at a time, 100 B to 64 MB (MB:
// 10^6 bytes; --smoke up to 1 MB), Homa workers over shared memory through
// the daemon against kernel TCP over loopback and over a veth pair between
// network namespaces. Homa is measured on each of perf.HomaLinks, a
// daemon each: homa-memif, a net_memif pair that copies every byte into
// and out of its rings, and homa-ring, a net_ring pair whose mbufs change
// hands (no copy in the link, as a NIC's DMA); each has its own ratios to
// TCP. The sizes above kernel Homa's 1,000,000 bytes need the daemon's
// long-message config (demo/workers.go: messages up to 64 MiB between
// its two hosts).
package rtt
