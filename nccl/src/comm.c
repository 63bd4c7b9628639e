/*
 * comm.c: connections (listen, connect, accept), messages (isend, irecv,
 * test), closing, and the two ways messages come in: the progress thread
 * (requests to the device's bound port, on rx) and hn_pump_tx (answers to
 * the requests this process sent, on tx).
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t hn_random64(void);
hn_obj *hn_new(int type, hn_dev *d);
hn_obj *hn_find(uint32_t id, int type);
void hn_free(hn_obj *o);
void hn_fail(hn_obj *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A tag of a request this process sends: DATA is (comm id << 32) | the
 * message number's low 32 bits (comm ids stay below 2^31); the others
 * have the high bit set, their kind in bits 32-39 and the object's id. */
#define TAG_CTL (1ull << 63)
static uint64_t ctl_tag(int kind, uint32_t id) { return TAG_CTL | (uint64_t)kind << 32 | id; }

static homa_addr addr_port(homa_addr a, uint16_t port)
{
	a.port = port;
	return a;
}

static int same_addr(const homa_addr *a, const homa_addr *b)
{
	return a->family == b->family && memcmp(a->ip, b->ip, 16) == 0;
}

/* send_ctl sends a request of kind with no payload on d's tx: 0, or a
 * homa status (HOMA_EARENA / HOMA_ESQFULL: try again). */
static int send_ctl(hn_dev *d, const homa_addr *to, int kind, uint32_t to_id, uint32_t from_id, uint64_t key,
		    uint64_t seq, uint64_t arg)
{
	hn_wire w = {.magic = HN_MAGIC, .kind = (uint8_t)kind, .version = HN_VERSION, .to_id = to_id,
		     .from_id = from_id, .key = key, .seq = seq, .arg = arg};
	struct iovec iov = {&w, sizeof w};
	return homa_send(d->tx, to, &iov, 1, ctl_tag(kind, from_id), HOMA_SEND_DETACHED, NULL);
}

/* ------------------------------------------------------------ requests */

static void req_done(hn_req *r, int state)
{
	__atomic_store_n(&r->state, (uint8_t)state, __ATOMIC_RELEASE); /* hn_test looks without the lock */
	hn_obj *c = r->comm;
	if (state == R_DONE) {
		uint64_t lat = (uint64_t)(hn_now() - r->t0);
		c->n.completed++;
		c->n.lat_ns_sum += lat;
		if (lat > c->n.lat_ns_max)
			c->n.lat_ns_max = lat;
	} else {
		c->n.errors++;
	}
}

/* fail_reqs ends every pending request of c with an error. */
static void fail_reqs(hn_obj *c)
{
	int n = c->type == HN_SEND ? HN_MAX_REQS : HN_WIN;
	for (int i = 0; i < n; i++)
		if (c->req[i].state == R_PENDING)
			req_done(&c->req[i], R_ERROR);
}

static void fail_comm(hn_obj *c, const char *why)
{
	hn_fail(c, "%s", why);
	fail_reqs(c);
}

/* hn_fail_dev fails every comm of d and their requests (its daemon is
 * gone). */
static void hn_fail_dev(hn_dev *d, const char *why)
{
	for (int i = 1; i <= g.hwm; i++) {
		hn_obj *o = g.objs[i];
		if (o && o->dev == d && o->type != HN_LISTEN)
			fail_comm(o, why);
	}
}

/* release_rx gives back m (a message of d's rx), or queues it for the
 * progress thread when it is waiting in rx (g.mu held). */
static void release_rx(hn_dev *d, homa_msg *m)
{
	if (!m->data && m->kind != HOMA_MSG_FAILED) {
		memset(m, 0, sizeof *m);
		return;
	}
	if (!d->rx_thread || d->nreleases == HN_RELEASES) {
		/* nobody else is in rx (it changes hands under g.mu); or the thread
		 * is far behind: this waits for its wait to end, which it soon will
		 * (it was woken when the queue started) */
		homa_msg_release(d->rx, m);
		memset(m, 0, sizeof *m);
		return;
	}
	if (d->nreleases++ == 0)
		homa_wake(d->rx);
	d->releases[d->nreleases - 1] = *m;
	memset(m, 0, sizeof *m);
}

static void flush_releases(hn_dev *d)
{
	for (int i = 0; i < d->nreleases; i++)
		homa_msg_release(d->rx, &d->releases[i]);
	d->nreleases = 0;
}

/* deliver copies early message m (seq's) into receive r and completes it;
 * m is answered already. */
static void deliver(hn_obj *c, hn_req *r, const homa_msg *m)
{
	size_t len = m->length - sizeof(hn_wire);
	if (len > r->size) {
		char why[160];
		snprintf(why, sizeof why, "message %llu is %zu bytes, longer than its receive's %zu",
			 (unsigned long long)r->seq, len, r->size);
		req_done(r, R_ERROR);
		fail_comm(c, why);
		return;
	}
	if (len)
		memcpy(r->buf, m->data + sizeof(hn_wire), len);
	r->got = len;
	c->n.bytes += len;
	req_done(r, R_DONE);
}

/* ----------------------------------------------------- the tx answers */

static void on_answer(hn_dev *d, homa_msg *m)
{
	hn_answer a;
	memset(&a, 0, sizeof a);
	int ok = m->kind == HOMA_MSG_RESPONSE && m->length >= sizeof a;
	if (ok)
		memcpy(&a, m->data, sizeof a);
	char why[160];
	if (m->kind == HOMA_MSG_FAILED)
		snprintf(why, sizeof why, "%s (%s)", m->refused ? "the daemon refused the send" : "the RPC failed",
			 homa_strerror(m->err));
	else if (!ok)
		snprintf(why, sizeof why, "a malformed answer of %u bytes", m->length);
	else
		snprintf(why, sizeof why, "the peer answered status %u", a.status);

	if (!(m->tag & TAG_CTL)) { /* DATA */
		hn_obj *c = hn_find((uint32_t)(m->tag >> 32), HN_SEND);
		if (!c) {
			d->late++; /* its comm is closed */
			return;
		}
		uint32_t low = (uint32_t)m->tag;
		hn_req *r = &c->req[low % HN_MAX_REQS];
		if (r->state != R_PENDING || (uint32_t)r->seq != low) {
			d->late++;
			return;
		}
		c->inflight--;
		if (ok && a.status == HN_OK) {
			if (a.credit > c->credit)
				c->credit = a.credit;
			c->n.bytes += r->size;
			req_done(r, R_DONE);
			return;
		}
		req_done(r, R_ERROR);
		char w2[240];
		snprintf(w2, sizeof w2, "message %llu of %zu bytes: %s", (unsigned long long)r->seq, r->size, why);
		fail_comm(c, w2);
		return;
	}
	int kind = (int)(m->tag >> 32 & 0xff);
	uint32_t id = (uint32_t)m->tag;
	if (kind == HN_CONNECT) {
		hn_obj *c = hn_find(id, HN_SEND);
		if (!c) {
			d->late++;
			return;
		}
		if (ok && a.status == HN_OK) {
			c->ready = 1;
			c->peer_id = a.id;
			c->peer_key = a.key;
			c->credit = a.credit;
		} else {
			char w2[240];
			snprintf(w2, sizeof w2, "connect: %s%s", why,
				 ok && a.status == HN_EBADKEY ? ": no such listen there (a handle of another job, or closed)" : "");
			hn_fail(c, "%s", w2);
		}
		return;
	}
	if (kind == HN_PROBE) {
		hn_obj *c = hn_find(id, HN_RECV);
		if (!c)
			return;
		c->probing = 0;
		if (!ok || a.status != HN_OK) {
			char w2[240];
			snprintf(w2, sizeof w2, "the sender is gone: its probe: %s", why);
			fail_comm(c, w2);
		}
		return;
	}
	if (kind == HN_CREDIT && !(ok && a.status == HN_OK)) {
		hn_obj *c = hn_find(id, HN_RECV);
		if (c) {
			char w2[240];
			snprintf(w2, sizeof w2, "a credit to the sender: %s", why);
			fail_comm(c, w2);
		}
	}
}

/* hn_pump_tx reads d's tx answers without waiting (g.mu held). */
void hn_pump_tx(hn_dev *d)
{
	homa_msg ms[32];
	for (;;) {
		int n = homa_receive_burst(d->tx, ms, 32, 0);
		if (n == HOMA_ETIMEDOUT || n == 0)
			return;
		if (n < 0) {
			char why[160];
			snprintf(why, sizeof why, "the daemon's session ended (%s): the daemon stopped", homa_strerror(n));
			hn_fail_dev(d, why);
			return;
		}
		for (int i = 0; i < n; i++) {
			on_answer(d, &ms[i]);
			homa_msg_release(d->tx, &ms[i]);
		}
		if (n < 32)
			return;
	}
}

/* ------------------------------------------------ requests coming in */

static void answer(hn_dev *d, homa_msg *m, uint32_t status, uint32_t id, uint64_t key, uint64_t credit)
{
	hn_answer a = {.status = status, .id = id, .key = key, .credit = credit};
	struct iovec iov = {&a, sizeof a};
	homa_reply(d->rx, m, &iov, 1, HOMA_REPLY_DETACHED);
}

static uint64_t credit_of(const hn_obj *c) { return c->next_post + (uint64_t)g.early; }

static void on_connect(hn_dev *d, homa_msg *m, const hn_wire *w)
{
	hn_obj *l = hn_find(w->to_id, HN_LISTEN);
	if (!l || l->key != w->key) {
		d->refused++;
		answer(d, m, HN_EBADKEY, 0, 0, 0);
		return;
	}
	hn_obj *c = l->nbacklog < HN_BACKLOG ? hn_new(HN_RECV, d) : NULL;
	if (!c) {
		d->refused++;
		answer(d, m, HN_EBACKLOG, 0, 0, 0);
		return;
	}
	c->peer = m->peer;
	c->peer_rx = addr_port(m->peer, (uint16_t)w->arg);
	c->peer_id = w->from_id;
	c->peer_key = w->seq;
	c->traffic_class = (int)(w->arg >> 16 & 0xffff) - 1;
	c->listen = l;
	c->credit_told = credit_of(c);
	c->last_progress = hn_now();
	l->backlog[l->nbacklog++] = c;
	answer(d, m, HN_OK, c->id, c->key, c->credit_told);
}

/* on_data takes DATA message m; 1 when m is kept (early). */
static int on_data(hn_dev *d, homa_msg *m, const hn_wire *w)
{
	hn_obj *c = hn_find(w->to_id, HN_RECV);
	if (!c || c->key != w->key || !same_addr(&c->peer, &m->peer) || c->peer.port != m->peer.port) {
		d->strangers++;
		answer(d, m, HN_EBADKEY, 0, 0, 0);
		return 0;
	}
	if (c->failed) {
		answer(d, m, HN_ECLOSED, 0, 0, 0);
		return 0;
	}
	uint64_t s = w->seq;
	hn_req *r = &c->req[s % HN_WIN];
	int fresh = s < c->next_post ? r->state == R_PENDING && r->seq == s /* its receive waits */
				     : s < c->credit_told && !c->early[s % HN_WIN].data; /* early, first time */
	if (!fresh) {
		char why[160];
		snprintf(why, sizeof why, "the sender sent message %llu past its credit (%llu) or twice",
			 (unsigned long long)s, (unsigned long long)c->credit_told);
		answer(d, m, HN_ECREDIT, 0, 0, 0);
		fail_comm(c, why);
		return 0;
	}
	if (s + 1 > c->arrived_to)
		c->arrived_to = s + 1;
	c->last_progress = hn_now();
	if (r->state == R_PENDING && r->seq == s) {
		int too_big = m->length - sizeof(hn_wire) > r->size;
		answer(d, m, too_big ? HN_ETOOBIG : HN_OK, 0, 0, credit_of(c));
		c->credit_told = credit_of(c);
		deliver(c, r, m);
		return 0;
	}
	c->n.early++;
	answer(d, m, HN_OK, 0, 0, credit_of(c));
	c->credit_told = credit_of(c);
	c->early[s % HN_WIN] = *m;
	return 1;
}

static void on_credit(hn_dev *d, homa_msg *m, const hn_wire *w, int probe)
{
	hn_obj *c = hn_find(w->to_id, HN_SEND);
	if (!c || c->key != w->key || !same_addr(&c->peer, &m->peer)) {
		if (probe && !c) {
			answer(d, m, HN_ECLOSED, 0, 0, 0); /* a closed comm's receiver asks: it is gone */
			return;
		}
		d->strangers++;
		answer(d, m, HN_EBADKEY, 0, 0, 0);
		return;
	}
	if (!probe && w->seq > c->credit)
		c->credit = w->seq;
	answer(d, m, c->failed ? HN_ECLOSED : HN_OK, 0, 0, 0);
}

/* on_request takes a request to d's port; 1 when m is kept. */
static int on_request(hn_dev *d, homa_msg *m)
{
	hn_wire w;
	if (m->length < sizeof w) {
		d->strangers++;
		answer(d, m, HN_EBADKEY, 0, 0, 0);
		return 0;
	}
	memcpy(&w, m->data, sizeof w);
	if (w.magic != HN_MAGIC || w.version != HN_VERSION) {
		d->strangers++;
		answer(d, m, HN_EBADKEY, 0, 0, 0);
		return 0;
	}
	switch (w.kind) {
	case HN_CONNECT:
		on_connect(d, m, &w);
		return 0;
	case HN_DATA:
		return on_data(d, m, &w);
	case HN_CREDIT:
	case HN_PROBE:
		on_credit(d, m, &w, w.kind == HN_PROBE);
		return 0;
	}
	d->strangers++;
	answer(d, m, HN_EBADKEY, 0, 0, 0);
	return 0;
}

/* check_ages probes the senders of receives that waited g.probe_ns, and
 * logs once each request older than g.warn_ns (g.mu held). */
static void check_ages(hn_dev *d, int64_t now)
{
	for (int i = 1; i <= g.hwm; i++) {
		hn_obj *c = g.objs[i];
		if (!c || c->dev != d || c->type == HN_LISTEN || c->failed)
			continue;
		if (c->type == HN_RECV && c->credit_owed &&
		    send_ctl(d, &c->peer_rx, HN_CREDIT, c->peer_id, c->id, c->peer_key, c->credit_told, 0) == 0)
			c->credit_owed = 0;
		if ((c->type == HN_SEND ? c->inflight : c->posted) == 0)
			continue;
		int n = c->type == HN_SEND ? HN_MAX_REQS : HN_WIN;
		for (int k = 0; k < n; k++) {
			hn_req *r = &c->req[k];
			if (r->state != R_PENDING || r->warned || now - r->t0 < g.warn_ns)
				continue;
			r->warned = 1;
			char p[80];
			HN_WARN("%s comm %#x, peer %s: message %llu (%zu bytes) not done after %.1f s: %zu bytes done",
				c->type == HN_SEND ? "send" : "recv", c->id, hn_peer_str(&c->peer, p, sizeof p),
				(unsigned long long)r->seq, r->size, (double)(now - r->t0) / 1e9, r->got);
		}
		if (c->type == HN_RECV && !c->listen && !c->probing && now - c->last_progress >= g.probe_ns &&
		    now - c->last_probe >= g.probe_ns) {
			if (send_ctl(d, &c->peer_rx, HN_PROBE, c->peer_id, c->id, c->peer_key, 0, 0) == 0) {
				c->probing = 1;
				c->last_probe = now;
			}
		}
	}
}

/* take_rx handles n messages of d's rx, or its end (n < 0 but a timeout)
 * (g.mu held). */
static void take_rx(hn_dev *d, homa_msg *ms, int n)
{
	if (n < 0 && n != HOMA_ETIMEDOUT) {
		char why[160];
		snprintf(why, sizeof why, "the daemon's session ended (%s): the daemon stopped", homa_strerror(n));
		hn_fail_dev(d, why);
		d->dead = 1;
		pthread_cond_signal(&d->idle);
		return;
	}
	for (int i = 0; i < n; i++) {
		homa_msg *m = &ms[i];
		int kept = 0;
		if (m->kind == HOMA_MSG_REQUEST)
			kept = on_request(d, m);
		/* RESPONSE, FAILED: rx sends only answers; a refused one's asker is gone */
		if (!kept)
			homa_msg_release(d->rx, m);
	}
}

/* hn_poll_rx reads d's rx without waiting, when the progress thread is not
 * in it (g.mu held). ask: the caller has requests to finish (test, isend,
 * irecv): it keeps rx from the thread for HN_HANDOFF_NS, and wakes the
 * thread out of rx when it finds it there. */
static void hn_poll_rx(hn_dev *d, int ask)
{
	if (d->dead)
		return;
	if (ask)
		d->last_call = hn_now();
	if (d->rx_thread) {
		if (ask && !d->yield_asked) {
			d->yield_asked = 1;
			d->handoffs++;
			homa_wake(d->rx);
		}
		return;
	}
	homa_msg ms[32];
	for (;;) {
		int n = homa_receive_burst(d->rx, ms, 32, 0);
		if (n == HOMA_ETIMEDOUT || n == 0)
			return;
		take_rx(d, ms, n);
		if (n < 32)
			return;
	}
}

/* progress is the device's thread: it reads rx when no caller does
 * (callers silent for HN_HANDOFF_NS), so every request
 * to the port is answered whether or not the application calls in; and it
 * probes, credits and warns every 10 ms. */
static void *progress(void *arg)
{
	hn_dev *d = arg;
	homa_msg ms[32];
	int64_t last_check = 0;
	pthread_mutex_lock(&g.mu);
	while (!d->dead) { /* as long as the process (NCCL never finalizes a net) */
		int64_t now = hn_now();
		if (now - last_check >= 10000000) { /* every 10 ms at most */
			last_check = now;
			hn_pump_tx(d);
			check_ages(d, now);
		}
		if (now - d->last_call < HN_HANDOFF_NS) {
			/* the callers read rx: wait for them to fall silent */
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += HN_HANDOFF_NS - (now - d->last_call);
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&d->idle, &g.mu, &ts);
			continue;
		}
		d->rx_thread = 1;
		d->yield_asked = 0;
		pthread_mutex_unlock(&g.mu);
		int n = homa_receive_burst(d->rx, ms, 32, 20000000);
		pthread_mutex_lock(&g.mu);
		d->rx_thread = 0;
		flush_releases(d);
		take_rx(d, ms, n);
	}
	pthread_mutex_unlock(&g.mu);
	return NULL;
}

int hn_start_progress(hn_dev *d)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->idle, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&d->thread, NULL, progress, d)) {
		HN_WARN("%s: cannot start the progress thread", d->path);
		return -1;
	}
	pthread_detach(d->thread);
	return 0;
}

/* -------------------------------------------------------- connections */

ncclResult_t hn_listen(int dev, void *handle, void **listen_comm)
{
	if (dev < 0 || dev >= g.ndev)
		return ncclInvalidArgument;
	pthread_mutex_lock(&g.mu);
	hn_dev *d = &g.dev[dev];
	hn_obj *l = hn_new(HN_LISTEN, d);
	pthread_mutex_unlock(&g.mu);
	if (!l) {
		HN_WARN("listen: %d listens and comms already", HN_MAX_OBJS - 1);
		return ncclSystemError;
	}
	hn_handle h = {.magic = HN_HANDLE_MAGIC, .version = HN_VERSION, .family = d->self.family,
		       .dev = (uint8_t)dev, .port = d->self.port, .listen_id = l->id, .key = l->key};
	memcpy(h.ip, d->self.ip, 16);
	_Static_assert(sizeof h <= NCCL_NET_HANDLE_MAXSIZE, "the handle fits NCCL's");
	memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
	memcpy(handle, &h, sizeof h);
	*listen_comm = l;
	return ncclSuccess;
}

/* hn_class_priority is the Homa priority of v10's per-connection traffic
 * class: -1 (the priority each message's length gives, as Homa chooses)
 * for NCCL_NET_TRAFFIC_CLASS_UNDEF and 0; for 1 to 255, an 8-bit traffic
 * class as RoCE and IP read it (NCCL_IB_TC's kind), its top three bits
 * (IP precedence: 32 to 63 is 1, 224 to 255 is 7), the level whose TOS
 * Homa's packets carry. Anything else is refused (-2). */
static int hn_class_priority(int traffic_class)
{
	if (traffic_class == NCCL_NET_TRAFFIC_CLASS_UNDEF || traffic_class == 0)
		return -1;
	if (traffic_class < 0 || traffic_class > 255)
		return -2;
	return traffic_class >> 5;
}

ncclResult_t hn_connect(int dev, int traffic_class, void *handle, void **send_comm)
{
	*send_comm = NULL;
	if (dev < 0 || dev >= g.ndev)
		return ncclInvalidArgument;
	/* NCCL calls again with the same handle until a comm comes back: the
	 * comm being made lives in the handle's spare bytes */
	hn_handle h;
	memcpy(&h, handle, sizeof h);
	if (h.magic != HN_HANDLE_MAGIC || h.version != HN_VERSION || (h.family != 4 && h.family != 6)) {
		HN_WARN("connect: not a handle of this plugin (magic %#x, version %u)", h.magic, h.version);
		return ncclInvalidUsage;
	}
	int prio = hn_class_priority(traffic_class);
	if (prio == -2) {
		HN_WARN("connect: trafficClass %d is not a traffic class (0 to 255, or undefined)", traffic_class);
		return ncclInvalidArgument;
	}
	uint32_t *pending = (uint32_t *)((char *)handle + NCCL_NET_HANDLE_MAXSIZE - sizeof(uint32_t));
	pthread_mutex_lock(&g.mu);
	hn_dev *d = &g.dev[dev];
	hn_obj *c = *pending ? hn_find(*pending, HN_SEND) : NULL;
	ncclResult_t rc = ncclSuccess;
	if (!c) {
		c = hn_new(HN_SEND, d);
		if (!c) {
			pthread_mutex_unlock(&g.mu);
			HN_WARN("connect: %d listens and comms already", HN_MAX_OBJS - 1);
			return ncclSystemError;
		}
		c->peer.family = h.family;
		memcpy(c->peer.ip, h.ip, 16);
		c->peer.port = h.port;
		c->traffic_class = traffic_class;
		c->send_flags = HOMA_SEND_DETACHED | (prio >= 0 ? HOMA_SEND_PRIORITY(prio) : 0);
		*pending = c->id;
		uint64_t arg = d->self.port | (uint64_t)(uint32_t)(traffic_class + 1) << 16;
		int s = send_ctl(d, &c->peer, HN_CONNECT, h.listen_id, c->id, h.key, c->key, arg);
		if (s) {
			hn_free(c);
			*pending = 0;
			pthread_mutex_unlock(&g.mu);
			if (s == HOMA_EARENA || s == HOMA_ESQFULL)
				return ncclSuccess; /* again */
			HN_WARN("connect: %s", homa_strerror(s));
			return ncclSystemError;
		}
	}
	hn_pump_tx(d);
	hn_poll_rx(d, 0);
	if (c->failed) {
		rc = ncclRemoteError;
		*pending = 0;
		hn_free(c);
	} else if (c->ready) {
		*pending = 0;
		*send_comm = c;
	}
	pthread_mutex_unlock(&g.mu);
	return rc;
}

ncclResult_t hn_accept(void *listen_comm, void **recv_comm)
{
	hn_obj *l = listen_comm;
	*recv_comm = NULL;
	pthread_mutex_lock(&g.mu);
	if (l->nbacklog == 0)
		hn_poll_rx(l->dev, 0);
	if (l->nbacklog > 0) {
		hn_obj *c = l->backlog[0];
		memmove(l->backlog, l->backlog + 1, (size_t)(l->nbacklog - 1) * sizeof *l->backlog);
		l->nbacklog--;
		c->listen = NULL;
		c->last_progress = hn_now();
		*recv_comm = c;
	}
	pthread_mutex_unlock(&g.mu);
	return ncclSuccess;
}

/* ----------------------------------------------------------- messages */

static ncclResult_t failed_rc(hn_obj *c) { return c->failed ? ncclRemoteError : ncclSuccess; }

ncclResult_t hn_isend(void *send_comm, void *data, size_t size, int tag, void **request)
{
	(void)tag;
	hn_obj *c = send_comm;
	*request = NULL;
	pthread_mutex_lock(&g.mu);
	hn_dev *d = c->dev;
	if (c->failed) {
		pthread_mutex_unlock(&g.mu);
		return ncclRemoteError;
	}
	if (size > d->max_bytes) {
		pthread_mutex_unlock(&g.mu);
		HN_WARN("isend of %zu bytes: the daemon's messages hold %zu at most (maxP2pBytes)", size, d->max_bytes);
		return ncclInvalidUsage;
	}
	hn_req *r = &c->req[c->next_seq % HN_MAX_REQS];
	if (c->next_seq >= c->credit || r->state != R_FREE) {
		hn_pump_tx(d);
		hn_poll_rx(d, 1);
		if (c->next_seq >= c->credit || r->state != R_FREE) {
			c->n.stalls++;
			ncclResult_t rc = failed_rc(c);
			pthread_mutex_unlock(&g.mu);
			return rc;
		}
	}
	hn_wire w = {.magic = HN_MAGIC, .kind = HN_DATA, .version = HN_VERSION, .to_id = c->peer_id,
		     .from_id = c->id, .key = c->peer_key, .seq = c->next_seq};
	struct iovec iov[2] = {{&w, sizeof w}, {data, size}};
	uint64_t tag64 = (uint64_t)c->id << 32 | (uint32_t)c->next_seq;
	int s = homa_send(d->tx, &c->peer, iov, size ? 2 : 1, tag64, c->send_flags, NULL);
	if (s == HOMA_ENOTSUP && c->send_flags != HOMA_SEND_DETACHED) {
		char p[80];
		HN_WARN("send comm %#x, peer %s: the daemon cannot send at a named priority: trafficClass %d is ignored",
			c->id, hn_peer_str(&c->peer, p, sizeof p), c->traffic_class);
		c->send_flags = HOMA_SEND_DETACHED;
		s = homa_send(d->tx, &c->peer, iov, size ? 2 : 1, tag64, c->send_flags, NULL);
	}
	if (s == HOMA_EARENA || s == HOMA_ESQFULL) {
		c->n.stalls++;
		hn_pump_tx(d);
		pthread_mutex_unlock(&g.mu);
		return ncclSuccess;
	}
	if (s) {
		char why[160];
		snprintf(why, sizeof why, "sending message %llu: %s", (unsigned long long)c->next_seq, homa_strerror(s));
		fail_comm(c, why);
		pthread_mutex_unlock(&g.mu);
		return ncclSystemError;
	}
	*r = (hn_req){.comm = c, .kind = HN_SEND, .state = R_PENDING, .seq = c->next_seq, .buf = data,
		      .size = size, .t0 = hn_now()};
	c->next_seq++;
	c->inflight++;
	c->n.requests++;
	if (c->send_flags != HOMA_SEND_DETACHED)
		c->n.at_priority++;
	*request = r;
	pthread_mutex_unlock(&g.mu);
	return ncclSuccess;
}

ncclResult_t hn_irecv(void *recv_comm, int n, void **data, const size_t *sizes, int *tags, void **request)
{
	(void)tags;
	hn_obj *c = recv_comm;
	*request = NULL; /* NCCL_NET_OPTIONAL_RECV_COMPLETION on entry is a hint: every receive completes */
	if (n != 1) {
		HN_WARN("irecv of %d buffers: maxRecvs is 1", n);
		return ncclInternalError;
	}
	pthread_mutex_lock(&g.mu);
	if (c->failed) {
		pthread_mutex_unlock(&g.mu);
		return ncclRemoteError;
	}
	uint64_t s = c->next_post;
	hn_req *r = &c->req[s % HN_WIN];
	if (c->posted >= HN_MAX_REQS || r->state != R_FREE) {
		c->n.stalls++;
		pthread_mutex_unlock(&g.mu);
		return ncclSuccess;
	}
	*r = (hn_req){.comm = c, .kind = HN_RECV, .state = R_PENDING, .seq = s, .buf = data[0], .size = sizes[0],
		      .t0 = hn_now()};
	c->next_post++;
	c->posted++;
	c->n.requests++;
	homa_msg *m = &c->early[s % HN_WIN];
	if (!m->data)
		hn_poll_rx(c->dev, 1); /* it may be in rx, not yet read */
	if (m->data) {
		deliver(c, r, m);
		release_rx(c->dev, m);
	}
	/* a sender that used all its credit waits for more: tell it */
	if (c->arrived_to >= c->credit_told) {
		c->credit_told = credit_of(c);
		c->credit_owed = 1;
		if (send_ctl(c->dev, &c->peer_rx, HN_CREDIT, c->peer_id, c->id, c->peer_key, c->credit_told, 0) == 0)
			c->credit_owed = 0;
	}
	*request = r;
	pthread_mutex_unlock(&g.mu);
	return ncclSuccess;
}

ncclResult_t hn_test(void *request, int *done, int *sizes)
{
	hn_req *r = request;
	*done = 0;
	/* NCCL calls test in a tight loop: a pending request reads the
	 * device's messages itself (rx for DATA, CREDIT and the rest, tx for
	 * its answers) when the lock is free, and otherwise leaves them to
	 * whoever holds it */
	if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == R_PENDING) {
		if (pthread_mutex_trylock(&g.mu))
			return ncclSuccess;
	} else {
		pthread_mutex_lock(&g.mu);
	}
	hn_obj *c = r->comm;
	if (r->state == R_PENDING) {
		hn_poll_rx(c->dev, 1);
		if (r->kind == HN_SEND)
			hn_pump_tx(c->dev);
	}
	ncclResult_t rc = ncclSuccess;
	if (r->state == R_DONE) {
		*done = 1;
		if (sizes)
			*sizes = (int)(r->kind == HN_SEND ? r->size : r->got);
	} else if (r->state == R_ERROR) {
		char p[80];
		HN_WARN("%s comm %#x, peer %s: message %llu failed: %s", r->kind == HN_SEND ? "send" : "recv", c->id,
			hn_peer_str(&c->peer, p, sizeof p), (unsigned long long)r->seq, c->why);
		rc = ncclRemoteError;
	}
	if (r->state == R_DONE || r->state == R_ERROR) {
		r->state = R_FREE;
		if (r->kind == HN_RECV)
			c->posted--;
	}
	pthread_mutex_unlock(&g.mu);
	return rc;
}

/* -------------------------------------------------------------- close */

static void print_stats(const hn_obj *c)
{
	char p[80], cls[96] = "";
	if (c->type == HN_SEND && c->traffic_class != NCCL_NET_TRAFFIC_CLASS_UNDEF)
		snprintf(cls, sizeof cls, ", trafficClass %d: %llu at Homa priority %d", c->traffic_class,
			 (unsigned long long)c->n.at_priority, hn_class_priority(c->traffic_class));
	HN_INFO("%s comm %#x, peer %s: %llu requests, %llu bytes, %d in flight, %llu stalls, %llu errors, "
		"%llu early, completion %.1f us mean %.1f us max%s; device %s: %llu strangers, %llu refused connects, "
		"%llu late answers, %llu hand-overs of rx%s%s",
		c->type == HN_SEND ? "send" : "recv", c->id, hn_peer_str(&c->peer, p, sizeof p),
		(unsigned long long)c->n.requests, (unsigned long long)c->n.bytes, c->inflight,
		(unsigned long long)c->n.stalls, (unsigned long long)c->n.errors, (unsigned long long)c->n.early,
		c->n.completed ? (double)c->n.lat_ns_sum / (double)c->n.completed / 1e3 : 0.0,
		(double)c->n.lat_ns_max / 1e3, cls, c->dev->name, (unsigned long long)c->dev->strangers,
		(unsigned long long)c->dev->refused, (unsigned long long)c->dev->late,
		(unsigned long long)c->dev->handoffs, c->failed ? "; failed: " : "",
		c->failed ? c->why : "");
}

static void close_recv_locked(hn_obj *c)
{
	for (int i = 0; i < HN_WIN; i++)
		if (c->early[i].data)
			release_rx(c->dev, &c->early[i]);
	hn_free(c);
}

ncclResult_t hn_close_send(void *send_comm)
{
	hn_obj *c = send_comm;
	pthread_mutex_lock(&g.mu);
	print_stats(c);
	hn_free(c); /* answers still to come find no comm (counted late) */
	pthread_mutex_unlock(&g.mu);
	return ncclSuccess;
}

ncclResult_t hn_close_recv(void *recv_comm)
{
	hn_obj *c = recv_comm;
	pthread_mutex_lock(&g.mu);
	print_stats(c);
	close_recv_locked(c);
	pthread_mutex_unlock(&g.mu);
	return ncclSuccess;
}

ncclResult_t hn_close_listen(void *listen_comm)
{
	hn_obj *l = listen_comm;
	pthread_mutex_lock(&g.mu);
	for (int i = 0; i < l->nbacklog; i++)
		close_recv_locked(l->backlog[i]);
	hn_free(l);
	pthread_mutex_unlock(&g.mu);
	return ncclSuccess;
}
