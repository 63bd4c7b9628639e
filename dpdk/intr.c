// Port control on EAL's interrupt thread (see intr.go): a call made
// there runs between the driver's own handlers, never beside them.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <semaphore.h>
#include <time.h>
#include <rte_alarm.h>
#include <rte_interrupts.h>
#include "shim.h"

static int homa_port_op(int op, uint16_t port) {
	switch (op) {
	case HOMA_PORT_STOP:
		return rte_eth_dev_stop(port);
	case HOMA_PORT_CLOSE:
		return rte_eth_dev_close(port);
	}
	return -EINVAL;
}

struct homa_intr_call {
	int op;
	uint16_t port;
	int rc;
	sem_t done;
};

static void homa_intr_call_cb(void *arg) {
	struct homa_intr_call *c = arg;
	c->rc = homa_port_op(c->op, c->port);
	sem_post(&c->done);
}

// homa_port_op_intr runs op on port on EAL's interrupt thread and returns
// its result; here, when this is that thread or it takes no alarm. After
// timeout_ms without the thread running it, the call is withdrawn:
// -ETIMEDOUT.
int homa_port_op_intr(int op, uint16_t port, unsigned timeout_ms) {
	if (rte_thread_is_intr())
		return homa_port_op(op, port);
	struct homa_intr_call c = {.op = op, .port = port};
	sem_init(&c.done, 0, 0);
	if (rte_eal_alarm_set(1, homa_intr_call_cb, &c) < 0) {
		sem_destroy(&c.done);
		return homa_port_op(op, port);
	}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	int rc;
	while ((rc = sem_timedwait(&c.done, &until)) != 0 && errno == EINTR)
		;
	if (rc != 0 && rte_eal_alarm_cancel(homa_intr_call_cb, &c) > 0) {
		sem_destroy(&c.done);
		return -ETIMEDOUT; // withdrawn before it ran
	}
	// It ran, or runs now: the cancel above returned once it finished.
	while (rc != 0 && sem_wait(&c.done) != 0 && errno == EINTR)
		;
	sem_destroy(&c.done);
	return c.rc;
}

// A redial restarts a port (stop, then start) on the interrupt thread,
// unless its link came up meanwhile; one per port at a time. pending is
// set by homa_redial and cleared by the alarm; the other fields are
// written by the alarm before it clears pending, and read after.
struct homa_redial {
	int pending;
	int started; // the port is started (as far as the redials know)
	int rc;	     // the last restart's result
};

static struct homa_redial homa_redials[RTE_MAX_ETHPORTS];

static void homa_redial_cb(void *arg) {
	uint16_t port = (uint16_t)(uintptr_t)arg;
	struct homa_redial *r = &homa_redials[port];
	if (homa_link_up(port) == 1) {
		r->rc = 0;
	} else {
		if (r->started)
			rte_eth_dev_stop(port);
		r->rc = rte_eth_dev_start(port);
		r->started = r->rc == 0;
	}
	__atomic_store_n(&r->pending, 0, __ATOMIC_RELEASE);
}

// homa_redial schedules a restart of port after delay_us; started says
// whether the port is started now. 0, -EBUSY while one is pending, or
// alarm's error.
int homa_redial(uint16_t port, unsigned delay_us, int started) {
	struct homa_redial *r = &homa_redials[port];
	if (__atomic_load_n(&r->pending, __ATOMIC_ACQUIRE))
		return -EBUSY;
	r->started = started;
	__atomic_store_n(&r->pending, 1, __ATOMIC_RELAXED);
	if (rte_eal_alarm_set(delay_us ? delay_us : 1, homa_redial_cb, (void *)(uintptr_t)port) < 0) {
		__atomic_store_n(&r->pending, 0, __ATOMIC_RELAXED);
		return -rte_errno;
	}
	return 0;
}

// homa_redial_result is 1 while a redial is pending, else 0 with the last
// one's result in *rc and the port's state in *started.
int homa_redial_result(uint16_t port, int *rc, int *started) {
	struct homa_redial *r = &homa_redials[port];
	if (__atomic_load_n(&r->pending, __ATOMIC_ACQUIRE))
		return 1;
	*rc = r->rc;
	*started = r->started;
	return 0;
}

// homa_redial_cancel withdraws a pending redial, or waits for one that
// runs; then homa_redial_result tells the port's state.
void homa_redial_cancel(uint16_t port) {
	struct homa_redial *r = &homa_redials[port];
	if (rte_eal_alarm_cancel(homa_redial_cb, (void *)(uintptr_t)port) > 0) {
		r->rc = -ECANCELED;
		__atomic_store_n(&r->pending, 0, __ATOMIC_RELEASE);
	}
}
