// Package cost is the cost scenario: the data path's time per packet
// event, for the engine alone (perf/enginebench: two endpoints on one
// goroutine, a link that copies nothing) and for the demo pair (this
// program's demo as a child: both Homa hosts on a net_ring pair, one
// busy-polling loop), for 100 B RPCs and 1 MB echoes.
package cost
