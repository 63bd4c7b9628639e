package dpdk

/*
// The burst functions never call back into Go.
#cgo nocallback homa_rx_burst
#cgo nocallback homa_tx_burst
#include "shim.h"
*/
import "C"

// RxBurst receives up to len(pkts) packets from RX queue q into pkts and
// returns how many it stored. One cgo call; it allocates nothing. The
// caller owns the received mbufs. On a port that is not started it returns
// 0 and counts the call (Stats.RxNotStarted).
//
// A queue must be polled by one thread at a time.
func (p *Port) RxBurst(q uint16, pkts []*Mbuf) int {
	if !p.started.Load() {
		p.rxNotStarted.Add(1)
		return 0
	}
	if len(pkts) == 0 {
		return 0
	}
	n := len(pkts)
	if n > 0xffff {
		n = 0xffff
	}
	return int(C.homa_rx_burst(C.uint16_t(p.ID), C.uint16_t(q), sliceAddr(pkts), C.uint16_t(n)))
}

// TxBurst hands pkts to TX queue q and returns how many the driver took;
// those now belong to the driver (which frees them after sending). The
// rest, pkts[n:], still belong to the caller, who retries or frees and
// counts them. One cgo call; it allocates nothing. On a port that is not
// started it takes nothing and counts the packets (Stats.TxNotStarted).
//
// A queue must be used by one thread at a time.
func (p *Port) TxBurst(q uint16, pkts []*Mbuf) int {
	if !p.started.Load() {
		p.txNotStarted.Add(uint64(len(pkts)))
		return 0
	}
	if len(pkts) == 0 {
		return 0
	}
	n := len(pkts)
	if n > 0xffff {
		n = 0xffff
	}
	return int(C.homa_tx_burst(C.uint16_t(p.ID), C.uint16_t(q), sliceAddr(pkts), C.uint16_t(n)))
}
