package dpdk

/*
// homa_link_up and homa_tx_done_cleanup never call back into Go.
#cgo nocallback homa_link_up
#cgo nocallback homa_tx_done_cleanup
#include "shim.h"
*/
import "C"

import (
	"errors"
	"time"
)

// Port control beside EAL's interrupt thread. A net_memif port's
// connection is set up and torn down on that thread, by memif's handlers
// of its control socket: when the peer leaves (exits, crashes, stops its
// port), memif_disconnect runs there, unmapping the shared regions and
// freeing their descriptors. rte_eth_dev_stop runs memif_disconnect too:
// called on another thread at the same moment, it runs beside the first
// and frees the regions twice ("EAL: Error: Invalid memory", or a heap
// broken further). So Stop and Close of a port whose driver works on that
// thread run on it, between its handlers (an EAL alarm, waited for); so
// does Redial. Other drivers' ports are stopped where Stop is called.
//
// A memif client does not connect again by itself when its server comes
// back: it dials only in rte_eth_dev_start. Redial restarts it.

// intrTimeout bounds the wait for the interrupt thread to run a Stop or a
// Close (it may be waiting in the burst guard, up to a second per unmapping).
const intrTimeout = 5 * time.Second

// ErrRedialPending is Redial's answer while an earlier one has not run.
var ErrRedialPending = errors.New("a redial is pending")

// onIntrThread reports whether the port's driver sets up and tears down
// its link on EAL's interrupt thread.
func (p *Port) onIntrThread() bool {
	p.driverOnce.Do(func() {
		if info, err := p.Info(); err == nil {
			p.driver = info.Driver
		}
	})
	return p.driver == "net_memif"
}

// LinkUp reports whether the port's link is up, without waiting: one cgo
// call, no allocation (for a polling loop's periodic check).
func (p *Port) LinkUp() bool { return C.homa_link_up(C.uint16_t(p.ID)) == 1 }

// TxDoneCleanup asks the driver to free now the mbufs TX queue q has
// sent (rte_eth_tx_done_cleanup): a NIC's driver frees them only when
// its ring needs room, so a quiet queue would hold its last frames. It
// returns how many packets were freed; a driver without the operation
// (the virtual devices free at once, or never hold: net_ring) gives an
// *Error whose Errno is ENOTSUP.
func (p *Port) TxDoneCleanup(q uint16) (int, error) {
	rc := C.homa_tx_done_cleanup(C.uint16_t(p.ID), C.uint16_t(q))
	if rc < 0 {
		return 0, newError(p.op("clean up sent packets of"), int(rc))
	}
	return int(rc), nil
}

func (p *Port) stopOrClose(op C.int, what string) error {
	var rc C.int
	if p.onIntrThread() {
		rc = C.homa_port_op_intr(op, C.uint16_t(p.ID), C.uint(intrTimeout.Milliseconds()))
	} else if op == C.HOMA_PORT_STOP {
		rc = C.rte_eth_dev_stop(C.uint16_t(p.ID))
	} else {
		rc = C.rte_eth_dev_close(C.uint16_t(p.ID))
	}
	if rc < 0 {
		return newError(p.op(what), int(rc))
	}
	return nil
}

// Redial restarts the port (stop, then start) after delay, on EAL's
// interrupt thread, unless its link is up by then: how a net_memif client
// dials its server again. It returns at once; RedialResult tells the
// outcome. Call it from one thread at a time (the loop that polls the
// port, while its link is down and it does not poll it), and not while a
// Stop or a Close may run (they cancel it first).
func (p *Port) Redial(delay time.Duration) error {
	started := 0
	if p.started.Load() {
		started = 1
	}
	rc := C.homa_redial(C.uint16_t(p.ID), C.uint(max(delay.Microseconds(), 1)), C.int(started))
	if rc == -C.EBUSY {
		return ErrRedialPending
	}
	if rc < 0 {
		return newError(p.op("redial"), int(rc))
	}
	p.redialing = true
	return nil
}

// RedialResult reports whether a redial is still pending and, once it is
// not, its error; the port's started state then follows it.
func (p *Port) RedialResult() (pending bool, err error) {
	if !p.redialing {
		return false, nil
	}
	var rc, started C.int
	if C.homa_redial_result(C.uint16_t(p.ID), &rc, &started) == 1 {
		return true, nil
	}
	p.redialing = false
	if rc == -C.ECANCELED {
		return false, nil
	}
	p.started.Store(started == 1)
	if rc < 0 {
		return false, newError(p.op("restart"), int(rc))
	}
	return false, nil
}

// CancelRedial withdraws a pending redial, or waits for the one running
// to finish.
func (p *Port) CancelRedial() {
	if p.redialing {
		C.homa_redial_cancel(C.uint16_t(p.ID))
		p.RedialResult()
	}
}

// SetLink sets the link up or down administratively
// (rte_eth_dev_set_link_up, _down), where the driver can.
func (p *Port) SetLink(up bool) error {
	var rc C.int
	if up {
		rc = C.rte_eth_dev_set_link_up(C.uint16_t(p.ID))
	} else {
		rc = C.rte_eth_dev_set_link_down(C.uint16_t(p.ID))
	}
	if rc < 0 {
		return newError(p.op("set link of"), int(rc))
	}
	return nil
}
