// Package nicq puts Homa's priorities on NIC transmit queues.
//
// Homa's eight priority levels are real queues (decision 4,
// docs/decisions.md#4-priorities-are-real-queues): each
// priority maps to one hardware TX queue of the port (map.go); when the
// port has fewer than eight, the highest priorities get queues of their own
// and the lowest share the last one. The virtual devices and most NICs
// offer no scheduler between TX queues (no rte_tm, no DCB here), so strict
// priority is ours (sched.go): each pass serves the highest non-empty
// queue first. A link-time estimate of the NIC's backlog (backlog.go)
// keeps the NIC's own queue a few microseconds long, so that a short
// message never waits behind a long one inside the NIC: packets stay in
// our priority queues, where a later high-priority packet can still pass
// them, until the estimate says the NIC has room.
//
// Priority is marked in the IPv4 TOS top bits (the kernel-Homa way) or in
// an 802.1Q PCP tag (mark.go).
//
// Where to start: Map, then Scheduler.
package nicq
