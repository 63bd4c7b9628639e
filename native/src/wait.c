/*
 * wait.c: waiting (python's waiting.py): completions are processed until
 * a condition holds, spinning on the completion ring for spin_ns first,
 * then sleeping on the eventfd behind the ring's wait flag (doc.go,
 * "Waiting"), with poll() also watching the control connection, whose
 * end means the daemon ended the session. And the calls that wait for
 * outcomes: homa_wait, homa_receive, homa_receive_burst, homa_poll.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* The control connection is readable or hung up: anything but "would
 * block" means the daemon closed it. 1 if the session has ended. */
int hm_control_ended(homa_client *c)
{
	char buf[256];
	ssize_t n = recv(c->sock, buf, sizeof(buf), MSG_DONTWAIT);
	if (n > 0)
		return 0; /* nothing is expected after the greeting; ignored */
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	c->dead = 1;
	return 1;
}

int hm_control_check(homa_client *c, int64_t now)
{
	if (c->sock < 0 || now - c->control_checked < 1000000)
		return 0;
	c->control_checked = now;
	return hm_control_ended(c);
}

/* sleep_until: the ring's wait flag set, one more look, then poll the
 * eventfd and the control socket until deadline (INT64_MAX: none) or
 * max_sleep. 0 or HOMA_EDEAD. */
static int sleep_until(homa_client *c, int64_t deadline)
{
	if (!hm_cons_prepare_sleep(&c->cq))
		return 0;
	c->st.sleeps++;
	int64_t ns = c->max_sleep_ns, now = hm_now();
	if (deadline != INT64_MAX && deadline - now < ns)
		ns = deadline - now;
	if (ns < 0)
		ns = 0;
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	int efd = atomic_load(&c->efd);
	struct pollfd p[2] = {{.fd = efd, .events = POLLIN}, {.fd = c->sock, .events = POLLIN}};
	int r = ppoll(p, 2, &ts, NULL);
	hm_cons_wake_up(&c->cq);
	if (r <= 0)
		return 0;
	if (p[0].revents & POLLIN) {
		uint64_t v;
		if (read(efd, &v, sizeof(v)) == sizeof(v))
			c->st.wakeups++;
	}
	if (p[1].revents && hm_control_ended(c))
		return HOMA_EDEAD;
	return 0;
}

int hm_wait_for(homa_client *c, hm_pred pred, void *arg, int64_t timeout_ns, int wakeable)
{
	int64_t deadline = timeout_ns < 0 ? INT64_MAX : hm_now() + timeout_ns;
	for (;;) {
		if (atomic_load_explicit(&c->rel_pending, memory_order_relaxed))
			hm_take_remote_releases(c);
		int rc = hm_flush_returns(c, 0);
		if (rc)
			return rc;
		hm_drain(c);
		if (pred(c, arg))
			return 0;
		if ((rc = hm_check_open(c)) != 0)
			return rc;
		if (wakeable && atomic_exchange(&c->woken, 0)) /* homa_wake: return as at the deadline */
			return HOMA_ETIMEDOUT;
		int64_t now = hm_now();
		if (now >= deadline) {
			hm_flush_returns(c, 1);
			/* a caller that polls (timeout 0) never sleeps, where an
			 * ended session is seen: look at the connection now and then */
			if (hm_control_check(c, now))
				return HOMA_EDEAD;
			return HOMA_ETIMEDOUT;
		}
		if ((rc = hm_flush_returns(c, 1)) != 0) /* nothing to do: give back what waits */
			return rc;
		int64_t end = deadline - now < c->spin_ns ? deadline : now + c->spin_ns;
		int arrived = 0;
		for (unsigned i = 0;; i++) {
			if (hm_cons_len(&c->cq)) {
				arrived = 1;
				break;
			}
			if ((i & 63) == 0 && (hm_now() >= end || (wakeable && atomic_load_explicit(&c->woken, memory_order_relaxed)) ||
					      atomic_load_explicit(&c->closing, memory_order_relaxed) ||
					      atomic_load_explicit(&c->rel_pending, memory_order_relaxed)))
				break;
			cpu_relax();
		}
		if (arrived) {
			c->st.spins++;
			continue;
		}
		if ((wakeable && atomic_load_explicit(&c->woken, memory_order_relaxed)) ||
		    atomic_load_explicit(&c->closing, memory_order_relaxed) ||
		    atomic_load_explicit(&c->rel_pending, memory_order_relaxed) || hm_now() >= deadline)
			continue; /* one more look, then the answer */
		if ((rc = hm_flush_returns(c, 1)) != 0) /* released while it spun (another thread) */
			return rc;
		if ((rc = sleep_until(c, deadline)) != 0)
			return rc;
	}
}

struct rpc_wait {
	uint64_t id;
	uint32_t idx, gen;
};

static int rpc_ended(homa_client *c, void *arg)
{
	struct rpc_wait *w = arg;
	hm_rpc *r = hm_slab_at(&c->rpcs, w->idx);
	return r->gen != w->gen || r->has_outcome || r->aborted;
}

HM_EXPORT int homa_wait(homa_client *c, uint64_t rpc_id, homa_msg *m, int64_t timeout_ns)
{
	if (!c || !m)
		return HOMA_EINVAL;
	memset(m, 0, sizeof(*m));
	hm_lock(c);
	int rc = hm_check_open(c);
	if (rc)
		goto out;
	int64_t i = hm_map_get(&c->rpc_map, rpc_id);
	if (rpc_id == 0 || (rpc_id & 1) || i < 0) {
		rc = HOMA_ENORPC;
		goto out;
	}
	hm_rpc *r = hm_slab_at(&c->rpcs, (uint32_t)i);
	struct rpc_wait w = {rpc_id, (uint32_t)i, r->gen};
	if (!r->aborted && (rc = hm_wait_for(c, rpc_ended, &w, timeout_ns, 1)) != 0)
		goto out;
	r = hm_slab_at(&c->rpcs, w.idx);
	if (r->gen != w.gen) { /* dropped meanwhile (abort of its outcome) */
		rc = HOMA_ENORPC;
		goto out;
	}
	if (r->aborted && !r->has_outcome) {
		m->id = rpc_id;
		m->tag = r->tag;
		m->peer = r->peer;
		m->kind = HOMA_MSG_FAILED;
		m->err = HOMA_ERR_ABORTED;
		rc = HOMA_ERR_ABORTED;
		goto out;
	}
	rc = hm_claim(c, r, m);
out:
	hm_unlock(c);
	return rc;
}

static int ready(homa_client *c, void *arg)
{
	(void)arg;
	return hm_has_ready(c);
}

HM_EXPORT int homa_receive_burst(homa_client *c, homa_msg *m, int n, int64_t timeout_ns)
{
	if (!c || !m || n <= 0)
		return HOMA_EINVAL;
	hm_lock(c);
	int rc = hm_check_open(c);
	if (rc)
		goto out;
	if ((rc = hm_wait_for(c, ready, NULL, timeout_ns, 1)) != 0)
		goto out;
	int k = 0;
	while (k < n && hm_ready_pop(c, &m[k]) >= 0)
		k++;
	rc = k;
out:
	hm_unlock(c);
	return rc;
}

HM_EXPORT int homa_receive(homa_client *c, homa_msg *m, int64_t timeout_ns)
{
	if (m)
		memset(m, 0, sizeof(*m));
	int rc = homa_receive_burst(c, m, 1, timeout_ns);
	return rc == 1 ? 0 : rc;
}

HM_EXPORT int homa_poll(homa_client *c)
{
	if (!c)
		return HOMA_EINVAL;
	hm_lock(c);
	int rc = hm_check_open(c);
	if (rc == 0) {
		rc = hm_flush_returns(c, 1);
		if (rc == 0)
			rc = hm_drain(c);
		if (rc == 0 && hm_control_check(c, hm_now()))
			rc = HOMA_EDEAD;
	}
	hm_unlock(c);
	return rc;
}
