// Package host is one Homa host on one DPDK port: the polling loop's pass
// (RX burst → link-header dispatch → engine → TX burst per priority
// queue), the transmit side that lends mbufs to the engine and owns the
// zero-copy payload buffers, the host stack (ARP and ICMP echo) with its
// neighbour table, fault injection, the counters snapshot for the metrics
// endpoint, and in-loop applications (App).
//
// Start reading at host.go (Host, PassAt) and pipeline.go (how a loop
// runs its hosts with one crossing into C per pass), then rx.go (what a
// received frame goes through), tx.go and payload.go (the transmit side), and
// port.go (SetupPort: how the daemon, the demo and the test pairs set a
// port up). Pair (pair.go) is two hosts on linked virtual ports, for the
// demo, the perf harness and tests.
//
// A Host is owned by its loop's thread. Other threads read it only
// through Snapshot.
//
// # A port on several lcores (shards): the design
//
// One lcore per port does a port's RX, the engine, its TX queues and every
// copy to the workers; a 100-400 Gb/s NIC needs several. A port is to run
// as N shards, each a Host of its own on its own lcore with its own
// engine.Endpoint (engine.Shard), its own RX queue and its own set of TX
// queues (one per priority), and no lock on the fast path. What is built,
// and what is not yet:
//
//   - Ownership (built: engine/shard.go). A shard owns the RPCs whose id
//     says so ((id>>1) % N); a server RPC is its client's id's shard, so
//     every Homa packet's owner is computed from its header
//     (engine.FrameShard), without a table but for homed ports (workers,
//     below). Hosts sharded alike share
//     nothing: client shard i's RPCs are server shard i's. Acks that name
//     another shard's RPC are handed to it (Shard.ForwardAck); CUTOFFS go
//     to every shard; a frame at the wrong shard starts nothing there.
//   - The receiver's grants over the port (built: sched.GrantShare). Each
//     shard grants its own messages, but only those among the port's
//     MaxOvercommit shortest, at the priority of their rank over the port,
//     within the port's MaxIncoming: each publishes its candidates and
//     incoming bytes in a cache line of its own and reads the others'
//     without a lock (kernel Homa ranks its active RPCs by a racy read of
//     their remaining bytes and keeps one atomic total_incoming, the same
//     trade: a view one Schedule old).
//   - The link (built: sched.LinkClock). The shards' pacers advance one
//     clock of the NIC's backlog by compare-and-swap, as kernel Homa's
//     link_idle_time. The limits on the port unreachables sent are one
//     engine.ICMPLimiter for the port, updated the same way.
//   - ICMP errors (built: steerICMP). An unreachable whose quote names an
//     RPC by its id goes to that RPC's shard; one that quotes only ports
//     to every shard (each has client ports of those numbers), once it
//     passes the address rules that need no RPC, else to none but the
//     shard that received it.
//   - The hand-off (built: shard.go, ShardSet). A shard that receives a
//     frame of an RPC it does not own gives the owner the mbuf over a
//     single-producer ring per ordered pair of shards, which the owner
//     drains in its next pass, in its RX burst's batch; acks for another
//     shard's RPCs and copies of CUTOFFS go the same way. A full ring
//     drops and counts (HandOff). So a port whose frames all reach one
//     queue still serves every shard (the virtual devices' case).
//   - Steering by the NIC (not yet). With N a power of two the owner is
//     bits 1..k of the sender id's last byte (Homa header byte 27): a NIC
//     whose flow rules match raw bytes can queue each shard's packets on
//     its RX queue (probed with rte_flow_validate at start-up), and the
//     hand-off is then the exception. RSS cannot: it hashes addresses
//     alone for IP protocol 146.
//   - Neighbours (built, simply): every shard keeps its own tables; an ARP
//     or neighbour discovery frame one shard receives and answers is
//     copied to the others, which learn from it. One writer publishing
//     copy-on-write snapshots would spare the copies.
//   - Workers (built: hub.Set, engine.PortHomes). A worker lives on one
//     shard, its home, for its session's life (the least loaded when it
//     attaches, to the port's one control socket): that shard's loop
//     serves its rings (one producer a ring), its endpoint starts its
//     client RPCs, whose ids are the shard's, so their responses come back
//     there, and binds its server ports there alone (ShardSet.HomePorts):
//     a client's packet to a homed port is steered to the home whatever
//     shard its id names, so a server RPC's owner is its port's home.
//     Another way was weighed: every shard serving every session, with a
//     completion ring per shard in each region and replies routed by id;
//     it spreads one busy worker over the shards but changes the region's
//     ABI and makes each worker poll n rings. A training job's workers
//     are many and alike, so homes spread them.
//   - The daemon (built): ports[].lcores gives a port's shards; the
//     demo's --lcores its hosts'.
//
// perf cost measures the engine on 1 and 2 shards a host (the goal rows
// "engine on 2 shards over 1"); perf/enginebench Sharded runs them, and
// BenchmarkShardedHosts (shardbench_test.go) two hosts of 1 and 2 shards
// on ring ports with a ring per shard.
package host
