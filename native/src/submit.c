/*
 * submit.c: the submission side (python's submit.py and the public calls
 * of client.py that submit): arguments checked, payloads staged in the
 * transmit arena, entries pushed on the submission ring, and the wait
 * for a submission's answer. Records come from slabs and maps that only
 * grow: a send, reply or release allocates nothing once warm.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

hm_sub *hm_new_sub(homa_client *c, uint8_t kind, uint32_t *idx)
{
	int64_t i = hm_slab_get(&c->subs);
	if (i < 0)
		return NULL;
	hm_sub *s = hm_slab_at(&c->subs, (uint32_t)i);
	uint32_t link = s->link, gen = s->gen;
	memset(s, 0, sizeof(*s));
	s->link = link;
	s->gen = gen;
	s->cookie = c->next_cookie;
	s->kind = kind;
	s->state = SUB_WAITING;
	s->awaited = 1; /* until pushed and, if a call awaits it, answered */
	if (hm_map_put(&c->sub_map, s->cookie, (uint32_t)i)) {
		hm_slab_put(&c->subs, (uint32_t)i);
		return NULL;
	}
	c->next_cookie++;
	if (c->next_cookie & HM_RETURN_TAG) /* after 2^63 submissions */
		c->next_cookie = 1;
	*idx = (uint32_t)i;
	return s;
}

void hm_free_sub(homa_client *c, hm_sub *s)
{
	uint32_t i = (uint32_t)(((char *)s - (char *)c->subs.recs) / (ptrdiff_t)c->subs.size);
	hm_map_del(&c->sub_map, s->cookie);
	s->gen++;
	hm_slab_put(&c->subs, i);
}

void hm_free_range(homa_client *c, hm_sub *s)
{
	if (!s->has_range)
		return;
	hm_arena_free(&c->arena, s->off, s->take);
	s->has_range = 0;
}

/* A submission is forgotten once answered and its range released. */
void hm_settle(homa_client *c, hm_sub *s)
{
	if (s->state != SUB_WAITING && !s->has_range && !s->awaited)
		hm_free_sub(c, s);
}

static void nap(int64_t ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

/* hm_push pushes one entry; when the ring is full it reads completions
 * (the engine may wait for room in the CQ) and retries for op_timeout.
 * 0, HOMA_ESQFULL, HOMA_EDEAD or HOMA_ECLOSED. */
int hm_push(homa_client *c, const hm_entry *e)
{
	uint8_t slot[HM_ENTRY_SIZE];
	hm_entry_encode(e, slot);
	if (hm_prod_push(&c->sq, slot, 1) == 1) {
		c->st.submissions++;
		hm_ring_bell(c);
		return 0;
	}
	c->st.sq_full_waits++;
	int64_t deadline = c->op_timeout_ns < 0 ? INT64_MAX : hm_now() + c->op_timeout_ns;
	while (hm_prod_push(&c->sq, slot, 1) != 1) {
		hm_drain(c);
		if (c->sock >= 0 && hm_control_ended(c)) /* a daemon that is gone reads nothing */
			return HOMA_EDEAD;
		int rc = hm_check_open(c);
		if (rc)
			return rc;
		if (hm_now() > deadline)
			return HOMA_ESQFULL;
		hm_ring_bell(c); /* a full ring may wait for a sleeping loop */
		nap(50000);
	}
	c->st.submissions++;
	hm_ring_bell(c);
	return 0;
}

void hm_ring_bell(homa_client *c)
{
	static const uint64_t one = 1;
	if (c->bell >= 0 && hm_prod_take_waiter(&c->sq)) {
		ssize_t w = write(c->bell, &one, sizeof(one)); /* EAGAIN: only a counter this worker filled itself */
		(void)w;
		c->st.doorbells++;
	}
}

/* Undoes hm_new_sub and the staging of a submission that was never pushed. */
static void unsubmit(homa_client *c, hm_sub *s)
{
	hm_free_range(c, s);
	hm_free_sub(c, s);
}

struct arena_want {
	uint64_t n, off, take;
};

static int arena_room(homa_client *c, void *arg)
{
	struct arena_want *w = arg;
	return hm_arena_alloc(&c->arena, w->n, &w->off, &w->take) == 0;
}

/* stage copies the bytes of iov into a free arena range: 0 with s->off,
 * s->take, s->length set, or a status. */
static int stage(homa_client *c, hm_sub *s, const struct iovec *iov, int iovcnt)
{
	if (iovcnt < 0 || (iovcnt > 0 && !iov))
		return HOMA_EINVAL;
	uint64_t n = 0;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return HOMA_EINVAL;
		n += iov[i].iov_len;
	}
	if (n == 0 || n > c->lim.max_message || n > c->arena.size)
		return HOMA_EINVAL;
	struct arena_want w = {.n = n};
	if (!arena_room(c, &w)) {
		c->st.arena_waits++;
		int rc = hm_wait_for(c, arena_room, &w, c->op_timeout_ns, 0);
		if (rc == HOMA_ETIMEDOUT)
			return HOMA_EARENA;
		if (rc)
			return rc;
	}
	uint8_t *dst = c->arena_mem + w.off;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(dst, iov[i].iov_base, iov[i].iov_len); /* the one copy */
		dst += iov[i].iov_len;
	}
	s->off = w.off;
	s->take = w.take;
	s->length = (uint32_t)n;
	s->has_range = 1;
	return 0;
}

struct awaited {
	uint32_t idx, gen;
};

static int answered(homa_client *c, void *arg)
{
	struct awaited *a = arg;
	hm_sub *s = hm_slab_at(&c->subs, a->idx);
	return s->gen != a->gen || s->state != SUB_WAITING;
}

/* await waits op_timeout for the answer to submission idx: 0 (accepted,
 * and *out its copy), a code > 0 (refused), or a status. The record stays
 * while it holds an arena range; *out is a copy taken before it may go. */
static int await(homa_client *c, uint32_t idx, hm_sub *out)
{
	hm_sub *s = hm_slab_at(&c->subs, idx);
	struct awaited a = {idx, s->gen};
	s->awaited = 1; /* the handlers keep the record until it is looked at here */
	int rc = hm_wait_for(c, answered, &a, c->op_timeout_ns, 0);
	s = hm_slab_at(&c->subs, idx);
	*out = *s;
	s->awaited = 0;
	hm_settle(c, s);
	if (rc)
		return rc;
	return out->state == SUB_FAILED ? out->err : 0;
}

/* control submits a Bind, Abort or AbortAll (e's op; port and rpc are
 * recorded for the answer's checks) and waits for its answer (await). The
 * caller holds the lock. */
static int control(homa_client *c, hm_entry *e)
{
	uint32_t idx;
	hm_sub *s = hm_new_sub(c, e->op, &idx);
	if (!s)
		return HOMA_ENOMEM;
	s->port = e->port;
	s->rpc_id = e->rpc;
	e->cookie = s->cookie;
	int rc = hm_push(c, e);
	if (rc != 0) {
		unsubmit(c, hm_slab_at(&c->subs, idx));
		return rc;
	}
	((hm_sub *)hm_slab_at(&c->subs, idx))->pushed = 1;
	hm_sub got;
	return await(c, idx, &got);
}

HM_EXPORT int homa_bind(homa_client *c, uint16_t port)
{
	if (!c)
		return HOMA_EINVAL;
	if (port == 0 || port > HOMA_MAX_SERVER_PORT)
		return HOMA_EINVAL;
	hm_lock(c);
	int rc = hm_check_open(c);
	if (rc == 0) {
		hm_entry e = {.op = HM_OP_BIND, .port = port};
		rc = control(c, &e);
	}
	hm_unlock(c);
	return rc;
}

static int check_dst(const homa_addr *a)
{
	static const uint8_t zero[16];
	if (!a || (a->family != 4 && a->family != 6) || a->port == 0 || a->port > HOMA_MAX_SERVER_PORT)
		return 0;
	if (a->family == 4)
		return memcmp(a->ip, zero, 4) != 0 && memcmp(a->ip + 4, zero, 12) == 0;
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	return memcmp(a->ip, zero, 16) != 0 && memcmp(a->ip, mapped, 12) != 0;
}

/* message stages a Send or Reply (kind) of iov's bytes to or from peer
 * (rpc_id: the request a Reply answers) and pushes it with the submission
 * flags given (a Send's priority), quiet when detached and the daemon
 * allows, with pages riding where it takes them. 0 and the
 * record's index in *idx, or a status (nothing is left behind). The
 * caller holds the lock. */
static int message(homa_client *c, uint8_t kind, const homa_addr *peer, uint64_t rpc_id, const struct iovec *iov,
		   int iovcnt, int detached, uint8_t flags, uint32_t *idx)
{
	hm_sub *s = hm_new_sub(c, kind, idx);
	if (!s)
		return HOMA_ENOMEM;
	s->rpc_id = rpc_id;
	s->peer = *peer;
	s->detached = (uint8_t)detached;
	/* a detached one asks for no Accepted where the daemon allows: its
	 * outcome (with its RPC id) and its Released are all that come back */
	s->quiet = detached && (c->features & HM_FEATURE_QUIET_ACCEPT);
	int rc = stage(c, s, iov, iovcnt);
	s = hm_slab_at(&c->subs, *idx); /* staging may wait, and the slab grow */
	if (rc) {
		unsubmit(c, s);
		return rc;
	}
	hm_entry e = {.op = kind,
		      .flags = (uint8_t)(flags | (s->quiet ? HM_SUB_FLAG_QUIET : 0)),
		      .length = s->length,
		      .cookie = s->cookie,
		      .rpc = rpc_id,
		      .peer_port = peer->port,
		      .offset = s->off};
	hm_addr_to_entry(peer, e.ip, e.ip6);
	hm_ride(c, &e, s);
	if ((rc = hm_push(c, &e)) != 0) {
		s = hm_slab_at(&c->subs, *idx);
		hm_unride(c, &e, s);
		unsubmit(c, s);
		return rc;
	}
	s = hm_slab_at(&c->subs, *idx);
	s->pushed = 1;
	if (detached)
		s->awaited = 0;
	return 0;
}

HM_EXPORT int homa_send(homa_client *c, const homa_addr *dst, const struct iovec *iov, int iovcnt, uint64_t tag,
			unsigned flags, uint64_t *rpc_id)
{
	if (rpc_id)
		*rpc_id = 0;
	if (!c || !check_dst(dst) || (flags & ~(HOMA_SEND_DETACHED | HOMA_SEND_PRIORITY(7))) ||
	    ((flags & HOMA_SEND_PRIORITY(7)) && !(flags & HOMA_SEND_PRIORITY(0))))
		return HOMA_EINVAL;
	int detached = (flags & HOMA_SEND_DETACHED) != 0;
	uint8_t sub = 0;
	if (flags & HOMA_SEND_PRIORITY(0))
		sub = (uint8_t)(HM_SUB_FLAG_PRIORITY | ((flags >> 4) & 7u) << HM_SUB_PRIORITY_SHIFT);
	hm_lock(c);
	int rc = hm_check_open(c);
	if (rc)
		goto out;
	if (sub && !(c->features & HM_FEATURE_PRIORITY)) {
		rc = HOMA_ENOTSUP;
		goto out;
	}
	uint32_t idx;
	if ((rc = message(c, HM_OP_SEND, dst, 0, iov, iovcnt, detached, sub, &idx)) != 0)
		goto out;
	((hm_sub *)hm_slab_at(&c->subs, idx))->tag = tag;
	if (detached) {
		c->st.sends++;
		goto out;
	}
	hm_sub got;
	rc = await(c, idx, &got);
	if (rc == 0) {
		c->st.sends++;
		if (rpc_id)
			*rpc_id = got.rpc_id;
	}
out:
	hm_unlock(c);
	return rc;
}

HM_EXPORT int homa_reply(homa_client *c, const homa_msg *req, const struct iovec *iov, int iovcnt, unsigned flags)
{
	if (!c || !req || req->kind != HOMA_MSG_REQUEST || !(req->id & 1) || (flags & ~HOMA_REPLY_DETACHED))
		return HOMA_EINVAL;
	int detached = (flags & HOMA_REPLY_DETACHED) != 0;
	hm_lock(c);
	int rc = hm_check_open(c);
	if (rc)
		goto out;
	int64_t ri = hm_map_get(&c->req_map, req->id);
	if (ri < 0) {
		rc = HOMA_EREPLIED; /* answered already (or never this client's) */
		goto out;
	}
	hm_req *rq = hm_slab_at(&c->reqs, (uint32_t)ri);
	homa_addr peer = rq->peer;
	uint32_t idx;
	if ((rc = message(c, HM_OP_REPLY, &peer, req->id, iov, iovcnt, detached, 0, &idx)) != 0)
		goto out;
	/* answered: a refusal for PEER_MESSAGE_LENGTH opens it again */
	ri = hm_map_get(&c->req_map, req->id);
	if (ri >= 0) {
		hm_map_del(&c->req_map, req->id);
		hm_slab_put(&c->reqs, (uint32_t)ri);
	}
	if (detached)
		goto out;
	hm_sub got;
	rc = await(c, idx, &got);
	if (rc == 0)
		c->st.replies++;
	else if (rc == HOMA_ERR_PEER_MESSAGE_LENGTH)
		hm_reopen_request(c, req->id, &peer);
out:
	hm_unlock(c);
	return rc;
}

HM_EXPORT int homa_abort(homa_client *c, uint64_t rpc_id)
{
	if (!c || rpc_id == 0 || (rpc_id & 1))
		return HOMA_EINVAL;
	hm_lock(c);
	int rc = hm_check_open(c);
	if (rc)
		goto out;
	hm_rpc *r = hm_rpc_find(c, rpc_id);
	if (!r || r->aborted) {
		rc = 0;
		goto out;
	}
	if (r->has_outcome) {
		hm_drop_rpc(c, r);
		rc = 0;
		goto out;
	}
	r->aborted = 1;
	hm_entry e = {.op = HM_OP_ABORT, .rpc = rpc_id};
	rc = control(c, &e);
	if (rc == HOMA_ERR_NO_RPC) {
		rc = 0;
	} else if (rc == 0) {
		c->st.aborts++;
		rc = 1;
	}
out:
	hm_unlock(c);
	return rc;
}

HM_EXPORT int homa_abort_all(homa_client *c)
{
	if (!c)
		return HOMA_EINVAL;
	hm_lock(c);
	int rc = hm_check_open(c);
	if (rc)
		goto out;
	hm_abort_everything(c);
	hm_entry e = {.op = HM_OP_ABORT_ALL};
	rc = control(c, &e);
	if (rc == 0)
		c->st.aborts++;
out:
	hm_unlock(c);
	return rc;
}
