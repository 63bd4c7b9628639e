// Package memnet is an in-memory network for engine tests and cluster
// simulations: a deterministic discrete-event simulator of hosts joined by
// one output-queued switch, or by a fabric of top-of-rack and core
// switches (Config.Fabric, fabric.go), driven by a manual clock in ns.
//
// Start reading at network.go (Network, Host, Send), then switch.go (what
// happens to a frame at the switch), fabric.go (racks and cores) and
// clock.go (the event loop).
//
// The network carries no ARP: an endpoint on a host takes its
// Config.Resolve from an engine.StaticNeighbours holding every host's
// address and MAC (Host.IP, Host.MAC), one table per network or one per
// host when a test changes entries under an endpoint. (memnet does not
// import engine, whose own tests run on it.)
//
// # The model
//
// Every host has a NIC and one full-duplex link to its own port of a
// single switch. All links share one rate (Config.LinkBps) and one
// propagation delay (Config.PropDelay). A frame sent from A to B goes
//
//	A.Send → A's NIC queue → A's uplink → switch ingress → faults →
//	egress port toward B → B's downlink → B's receive function
//
// and its delays come from exactly these places:
//
//   - Waiting in A's NIC behind frames A sent earlier or at a higher
//     priority. The NIC serves up to 8 strict-priority queues (priority =
//     IPv4 TOS>>5, 7 highest); its queue is unbounded, so a sender that
//     floods sees latency, not loss.
//   - Serialization on A's uplink: TxTime(len) = ceil((len +
//     FrameOverhead)·8 / LinkBps) ns.
//   - Propagation to the switch: PropDelay.
//   - The switch is store-and-forward with zero switching latency: a frame
//     is routed when its last bit has arrived, by its IPv4 destination
//     (read with the wire package; MACs are not looked at), to the egress
//     port of the host with that address. Frames that are not IPv4, or to
//     an address no host has, are dropped and counted.
//   - Waiting at the egress port. Each port has its own buffer
//     (Config.BufferBytes, counting the queued frames and the one being
//     sent) and up to 8 strict-priority queues; a frame that does not fit
//     is tail-dropped. This is where congestion appears: several senders
//     at link rate into one receiver (incast), or a receiver's port busy
//     with a long message while a short one waits. Scheduling is
//     non-preemptive: a high-priority frame waits for the frame on the wire
//     to finish, then overtakes everything queued below it.
//   - Serialization on the downlink (TxTime again) and propagation
//     (PropDelay), after which B's receive function runs.
//
// So an idle path costs 2·TxTime(len) + 2·PropDelay: 2,900 ns for a
// 1,500-byte frame at the defaults (10 Gb/s, 250 ns).
//
// With Config.FIFO every port (NIC and switch) has one FIFO queue, which
// gives a TCP-like baseline on the same switch; Config.Queues < 8 shares
// queues between adjacent priorities.
//
// # Faults
//
// At the switch's ingress, in this order: frames from or to a partitioned
// host are dropped (Partition); DropNext rules take the frames they match;
// then, drawn from a random source seeded by Config.Seed, a fraction
// Config.Loss is dropped, a fraction Config.Duplicate is sent twice, and a
// fraction Config.Reorder of the copies is held back by ReorderDelay
// before joining its egress queue, so frames behind it overtake it.
// Restart drops what is queued at and toward a host and calls its
// OnRestart hook. Every dropped frame is counted by cause (Stats) and can
// be traced (SetTrace).
//
// # Time and determinism
//
// Nothing runs by itself: the caller advances time with Step, RunUntil
// or RunUntilIdle, and callbacks (At, After, receive functions, restart
// hooks) run inside those calls on the caller's goroutine; a callback may
// send and schedule, but must not itself call Step, RunUntil or
// RunUntilIdle. Events due at
// the same ns run in the order they were scheduled, and the only
// randomness is the seeded source, so the same calls on the same Config
// give the same trace.
//
// # Cost
//
// Events are values in a binary heap, frames are copied once at Send into
// buffers recycled through a free list, and queues are intrusive lists:
// in steady state a frame costs four events (five if held back for
// reordering) and no allocation (a test checks this with
// testing.AllocsPerRun): about 250 ns of CPU on the project's 2-vCPU
// machines (BenchmarkNetwork_flow), so millions of frames per second.
//
// # Limits
//
//   - One switch, or the two-level fabric of fabric.go: two rates (host
//     links, ToR–core links), one propagation delay, one switch latency;
//     no deeper trees, no per-link rates beyond those two.
//   - One switching latency for every switch (Fabric.SwitchLatency; none
//     at the single switch), no cut-through, no shared buffer between
//     ports, no PFC or pause frames; the NIC queue is unbounded, and a
//     host's turnaround is one fixed delay per frame sent (Config.HostDelay)
//     and one per frame received (Config.RecvDelay), not a CPU that
//     frames queue for.
//   - Priority comes from the IPv4 TOS only (not an 802.1Q PCP), and the
//     IPv4 header checksum is not verified by the switch; the receiver's
//     parser does that.
//   - Serialization time is rounded up per frame to a whole ns, so long
//     trains of odd-sized frames run slightly slower than the real link
//     (under 1 ns per frame). Ethernet's minimum frame size is not
//     enforced.
//   - Faults are independent per frame (no bursty loss), happen only at
//     the switch, and are never applied to frames already on a downlink.
//   - Not safe for concurrent use: one goroutine drives the network.
package memnet
