// Package host is one Homa host on one DPDK port: the polling loop's pass
// (RX burst → link-header dispatch → engine → TX burst per priority
// queue), the transmit side that lends mbufs to the engine and owns the
// zero-copy payload buffers, the host stack (ARP, ICMP echo, IPv6
// neighbour discovery) with its neighbour tables, fault injection, the
// counters snapshot for the metrics endpoint, and in-loop applications
// (App).
//
// Start reading at host.go (Host, PassAt) and pipeline.go (how a loop
// runs its hosts with one crossing into C per pass), then rx.go (what a
// received frame goes through), tx.go and payload.go (the transmit side), and
// port.go (SetupPort: how the daemon, the demo and the test pairs set a
// port up). Pair (pair.go) is two hosts on linked virtual ports, for the
// demo, the perf harness and tests. shard.go (ShardSet) runs a port as
// several shards, copier.go (Copier) moves receive copies off the loop:
// their design is docs/design.md#shards-and-the-receive-copier.
//
// A Host is owned by its loop's thread. Other threads read it only
// through Snapshot.
package host
