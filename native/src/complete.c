/*
 * complete.c: the completion side (python's completions.py): entries of
 * the completion ring copied out, checked (hm_parse_completion, then
 * against the client's own state: cookies, RPC ids, arena ranges held,
 * pool pages held) and applied; a bad or unexpected one is counted and
 * skipped, never trusted. What they yield waits in the ready queue
 * (homa_receive) or in its RPC's record (homa_wait).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

hm_rpc *hm_rpc_find(homa_client *c, uint64_t id)
{
	int64_t i = hm_map_get(&c->rpc_map, id);
	return i < 0 ? NULL : hm_slab_at(&c->rpcs, (uint32_t)i);
}

static hm_sub *sub_find(homa_client *c, uint64_t cookie)
{
	if (cookie & HM_RETURN_TAG)
		return NULL;
	int64_t i = hm_map_get(&c->sub_map, cookie);
	if (i < 0)
		return NULL;
	hm_sub *s = hm_slab_at(&c->subs, (uint32_t)i);
	return s->pushed ? s : NULL; /* a cookie not submitted yet: nothing can answer it */
}

static uint32_t rpc_index(homa_client *c, const hm_rpc *r)
{
	return (uint32_t)(((const char *)r - (const char *)c->rpcs.recs) / (ptrdiff_t)c->rpcs.size);
}

static void free_rpc(homa_client *c, hm_rpc *r)
{
	hm_map_del(&c->rpc_map, r->id);
	r->gen++; /* a queued ITEM_RPC of it is stale now */
	r->has_outcome = 0;
	hm_slab_put(&c->rpcs, rpc_index(c, r));
}

void hm_drop_rpc(homa_client *c, hm_rpc *r)
{
	if (r->has_outcome)
		hm_drop_msg(c, &r->outcome);
	free_rpc(c, r);
}

int hm_claim(homa_client *c, hm_rpc *r, homa_msg *m)
{
	*m = r->outcome;
	free_rpc(c, r);
	return m->kind == HOMA_MSG_FAILED ? m->err : 0;
}

static void bad(homa_client *c, const char *why, const hm_entry *e)
{
	c->st.bad_completions++;
	hm_bad(c, "bad completion", why, e);
}

static void unexpected(homa_client *c, const char *why, const hm_entry *e)
{
	c->st.unexpected_completions++;
	hm_bad(c, "unexpected completion", why, e);
}

/* ---- the ready queue: a ring of items that doubles when full ---- */

int hm_ready_push(homa_client *c, const hm_item *it)
{
	if (c->ready_len == c->ready_cap) {
		uint32_t ncap = c->ready_cap * 2;
		hm_item *n = malloc(ncap * sizeof(*n));
		if (!n)
			return -1;
		for (uint32_t i = 0; i < c->ready_len; i++)
			n[i] = c->ready[(c->ready_head + i) & (c->ready_cap - 1)];
		free(c->ready);
		c->ready = n;
		c->ready_cap = ncap;
		c->ready_head = 0;
	}
	c->ready[(c->ready_head + c->ready_len) & (c->ready_cap - 1)] = *it;
	c->ready_len++;
	return 0;
}

/* live says whether an item still holds something to hand out. */
static int live(homa_client *c, const hm_item *it)
{
	if (it->type == ITEM_MSG)
		return 1;
	if (it->type == ITEM_RPC) {
		hm_rpc *r = hm_slab_at(&c->rpcs, it->idx);
		return r->gen == it->gen && r->has_outcome;
	}
	return 0;
}

int hm_has_ready(homa_client *c)
{
	while (c->ready_len) {
		if (live(c, &c->ready[c->ready_head]))
			return 1;
		c->ready_head = (c->ready_head + 1) & (c->ready_cap - 1);
		c->ready_len--;
	}
	return 0;
}

int hm_ready_pop(homa_client *c, homa_msg *m)
{
	if (!hm_has_ready(c))
		return -1;
	hm_item *it = &c->ready[c->ready_head];
	c->ready_head = (c->ready_head + 1) & (c->ready_cap - 1);
	c->ready_len--;
	if (it->type == ITEM_RPC)
		return hm_claim(c, hm_slab_at(&c->rpcs, it->idx), m);
	*m = it->msg;
	return m->kind == HOMA_MSG_FAILED ? m->err : 0;
}

static void queue_msg(homa_client *c, const homa_msg *m)
{
	hm_item it = {.type = ITEM_MSG, .msg = *m};
	if (hm_ready_push(c, &it)) {
		/* out of memory: the message is lost, but its pages are not */
		homa_msg x = *m;
		hm_drop_msg(c, &x);
		hm_bad(c, "dropped", "no memory for the ready queue", NULL);
	}
}

/* ---- messages over pool pages ---- */

static void new_message(homa_client *c, const hm_entry *e, homa_msg *m, uint8_t kind)
{
	memset(m, 0, sizeof(*m));
	m->id = e->rpc;
	hm_addr_from_entry(&m->peer, e->ip, e->ip6, e->peer_port);
	m->port = e->port;
	m->kind = kind;
	m->length = e->length;
	m->data = c->pool_mem + (uint64_t)e->page * HOMA_PAGE_SIZE;
	m->handle = (uint64_t)e->page << 32 | e->pages;
	hm_mark_held(c, e->page, e->pages);
	c->messages_alive++;
}

static void failure(homa_msg *m, uint64_t id, uint64_t tag, const homa_addr *peer, uint16_t err, uint8_t refused)
{
	memset(m, 0, sizeof(*m));
	m->id = id;
	m->tag = tag;
	if (peer)
		m->peer = *peer;
	m->kind = HOMA_MSG_FAILED;
	m->refused = refused;
	m->err = err;
}

/* A well-formed Request or Response that this client cannot take: its
 * pages go back unless they overlap pages it holds. */
static void refuse_message(homa_client *c, const char *why, const hm_entry *e)
{
	unexpected(c, why, e);
	if (hm_pages_free(c, e->page, e->pages)) {
		hm_mark_held(c, e->page, e->pages);
		hm_return_later(c, e->page, e->pages);
	}
}

static void finish(homa_client *c, hm_rpc *r, const homa_msg *outcome)
{
	r->outcome = *outcome;
	r->has_outcome = 1;
	if (r->aborted) {
		hm_drop_rpc(c, r);
		return;
	}
	hm_item it = {.type = ITEM_RPC, .idx = rpc_index(c, r), .gen = r->gen};
	if (hm_ready_push(c, &it))
		hm_bad(c, "unqueued", "no memory for the ready queue: only homa_wait finds this outcome", NULL);
}

/* ---- one handler per completion op ---- */

static void on_accepted(homa_client *c, const hm_entry *e)
{
	hm_sub *s = sub_find(c, e->cookie);
	if (!s || s->state != SUB_WAITING || s->quiet)
		return unexpected(c, "no submission waits for this cookie", e);
	switch (s->kind) {
	case HM_OP_BIND:
		if (e->port != s->port)
			return bad(c, "bind accepted for another port", e);
		c->bound[s->port / 8] |= (uint8_t)(1u << (s->port % 8));
		break;
	case HM_OP_SEND: {
		if (e->rpc == 0 || (e->rpc & 1) || hm_rpc_find(c, e->rpc))
			return bad(c, "send accepted with an RPC id that is not a new even one", e);
		int64_t i = hm_slab_get(&c->rpcs);
		if (i < 0)
			return bad(c, "no memory for the RPC's record", e);
		hm_rpc *r = hm_slab_at(&c->rpcs, (uint32_t)i);
		if (hm_map_put(&c->rpc_map, e->rpc, (uint32_t)i)) {
			hm_slab_put(&c->rpcs, (uint32_t)i);
			return bad(c, "no memory for the RPC's record", e);
		}
		r->id = e->rpc;
		r->cookie = e->cookie;
		r->tag = s->tag;
		r->peer = s->peer;
		r->has_outcome = 0;
		r->aborted = s->aborted; /* abort_all came after this Send: its end is dropped */
		s->rpc_id = e->rpc;
		break;
	}
	case HM_OP_REPLY:
	case HM_OP_ABORT:
		if (e->rpc != s->rpc_id)
			return bad(c, "accepted for another RPC", e);
		break;
	}
	if (e->flags & HM_COMP_FLAG_RELEASED)
		hm_free_range(c, s);
	s->state = SUB_ACCEPTED;
	if (s->detached && s->kind == HM_OP_REPLY)
		c->st.replies++;
	hm_settle(c, s);
}

static void on_released(homa_client *c, const hm_entry *e)
{
	hm_sub *s = sub_find(c, e->cookie);
	if (!s || !s->has_range)
		return unexpected(c, "no arena range held under this cookie", e);
	if (e->offset != s->off || e->length != s->length)
		return bad(c, "released a range other than the message's", e);
	hm_free_range(c, s);
	if (s->quiet && s->kind == HM_OP_REPLY && s->state == SUB_WAITING) {
		s->state = SUB_ACCEPTED; /* a quiet reply's Released is its acceptance */
		c->st.replies++;
	}
	hm_settle(c, s);
}

/* The outcome of a quiet Send: its first completion carries its RPC id. */
static void quiet_outcome(homa_client *c, hm_sub *s, const homa_msg *m)
{
	s->state = SUB_ACCEPTED;
	s->rpc_id = m->id;
	if (s->aborted) {
		homa_msg x = *m;
		hm_drop_msg(c, &x);
	} else {
		queue_msg(c, m);
	}
	hm_settle(c, s);
}

static void on_error(homa_client *c, const hm_entry *e)
{
	if (e->cookie & HM_RETURN_TAG) {
		c->st.page_return_errors++;
		hm_bad(c, "page return refused", "the daemon says we did not hold them", e);
		return;
	}
	hm_sub *s = sub_find(c, e->cookie);
	if (s && s->state == SUB_WAITING) {
		if (e->flags & HM_COMP_FLAG_RELEASED)
			hm_free_range(c, s);
		if (s->ride_pages && e->err < 16 && e->err != HOMA_ERR_BAD_PAGE) {
			/* refused as malformed: the pages riding on it were not taken */
			hm_mark_held(c, s->ride_page, s->ride_pages);
			hm_return_later(c, s->ride_page, s->ride_pages);
		}
		if (s->quiet && s->kind == HM_OP_SEND && e->rpc) {
			if ((e->rpc & 1) || hm_rpc_find(c, e->rpc))
				return bad(c, "quiet send failed with an RPC id that is not a new even one", e);
			homa_msg m;
			failure(&m, e->rpc, s->tag, &s->peer, e->err, 0);
			c->st.rpc_errors++;
			return quiet_outcome(c, s, &m);
		}
		s->state = SUB_FAILED;
		s->err = e->err;
		if (s->detached && !s->awaited) {
			/* a detached send or reply refused: its failure goes to receive */
			c->st.rpc_errors++;
			homa_msg m;
			if (s->kind == HM_OP_SEND) {
				c->st.send_refused++;
				failure(&m, 0, s->tag, &s->peer, e->err, 1);
			} else {
				c->st.reply_refused++;
				failure(&m, s->rpc_id, 0, &s->peer, e->err, 2);
				if (e->err == HOMA_ERR_PEER_MESSAGE_LENGTH)
					hm_reopen_request(c, s->rpc_id, &s->peer);
			}
			if (!s->aborted)
				queue_msg(c, &m);
		}
		hm_settle(c, s);
		return;
	}
	hm_rpc *r = e->rpc ? hm_rpc_find(c, e->rpc) : NULL;
	if (r && r->cookie == e->cookie && !r->has_outcome) {
		if ((e->flags & HM_COMP_FLAG_RELEASED) && s && s->has_range) {
			hm_free_range(c, s);
			hm_settle(c, s);
		}
		c->st.rpc_errors++;
		homa_msg m;
		failure(&m, r->id, r->tag, &r->peer, e->err, 0);
		finish(c, r, &m);
		return;
	}
	unexpected(c, "error for no waiting submission or RPC", e);
}

static int no_peer(const hm_entry *e)
{
	static const uint8_t z[16];
	return memcmp(e->ip, z, 4) == 0 && memcmp(e->ip6, z, 16) == 0;
}

static void on_request(homa_client *c, const hm_entry *e)
{
	if (e->cookie != 0 || !(e->rpc & 1) || no_peer(e) || e->peer_port == 0)
		return refuse_message(c, "request with a nonzero cookie, an even id or no peer", e);
	if (!(c->bound[e->port / 8] & (1u << (e->port % 8))) || e->port == 0 || e->port > HOMA_MAX_SERVER_PORT)
		return refuse_message(c, "request for a port this worker did not bind", e);
	if (hm_map_get(&c->req_map, e->rpc) >= 0)
		return refuse_message(c, "request with the id of one not answered yet", e);
	if (!hm_pages_free(c, e->page, e->pages))
		return bad(c, "request in pool pages this worker still holds", e);
	homa_msg m;
	new_message(c, e, &m, HOMA_MSG_REQUEST);
	homa_addr peer = m.peer;
	hm_reopen_request(c, e->rpc, &peer);
	c->st.requests++;
	queue_msg(c, &m);
}

static void on_response(homa_client *c, const hm_entry *e)
{
	hm_rpc *r = hm_rpc_find(c, e->rpc);
	hm_sub *s = NULL;
	if (!r) {
		s = sub_find(c, e->cookie);
		if (!s || s->state != SUB_WAITING || !s->quiet || s->kind != HM_OP_SEND || e->rpc == 0 || (e->rpc & 1))
			return refuse_message(c, "response for no outstanding RPC of this cookie", e);
	} else if (r->cookie != e->cookie || r->has_outcome) {
		return refuse_message(c, "response for no outstanding RPC of this cookie", e);
	}
	if (!hm_pages_free(c, e->page, e->pages))
		return bad(c, "response in pool pages this worker still holds", e);
	c->st.responses++;
	homa_msg m;
	new_message(c, e, &m, HOMA_MSG_RESPONSE);
	if (r) {
		m.tag = r->tag;
		finish(c, r, &m);
	} else {
		m.tag = s->tag;
		quiet_outcome(c, s, &m);
	}
}

static void handle(homa_client *c, const uint8_t *slot)
{
	hm_entry e;
	int code = hm_parse_completion(slot, &c->lim, &e);
	if (code) {
		char nb[16];
		return bad(c, hm_err_name((unsigned)code, nb), &e);
	}
	switch (e.op) {
	case HM_COMP_ACCEPTED:
		return on_accepted(c, &e);
	case HM_COMP_REQUEST:
		return on_request(c, &e);
	case HM_COMP_RESPONSE:
		return on_response(c, &e);
	case HM_COMP_ERROR:
		return on_error(c, &e);
	case HM_COMP_RELEASED:
		return on_released(c, &e);
	}
}

int hm_drain(homa_client *c)
{
	int total = 0;
	while ((uint64_t)total < c->cq.size) { /* a ring's worth at most: a busy engine cannot hold us here */
		unsigned n = hm_cons_pop(&c->cq, c->slots, HM_BURST);
		for (unsigned i = 0; i < n; i++)
			handle(c, c->slots + (size_t)i * HM_ENTRY_SIZE);
		total += (int)n;
		c->st.completions += n;
		if (n < HM_BURST)
			break;
	}
	return total;
}

void hm_reopen_request(homa_client *c, uint64_t id, const homa_addr *peer)
{
	if (hm_map_get(&c->req_map, id) >= 0)
		return;
	int64_t i = hm_slab_get(&c->reqs);
	if (i < 0)
		return;
	hm_req *q = hm_slab_at(&c->reqs, (uint32_t)i);
	q->peer = *peer;
	if (hm_map_put(&c->req_map, id, (uint32_t)i))
		hm_slab_put(&c->reqs, (uint32_t)i);
}

void hm_abort_everything(homa_client *c)
{
	for (uint32_t i = 0; i < c->rpc_map.cap;) {
		if (!c->rpc_map.keys[i]) {
			i++;
			continue;
		}
		hm_rpc *r = hm_slab_at(&c->rpcs, c->rpc_map.vals[i]);
		if (r->has_outcome) {
			hm_drop_rpc(c, r); /* deleting shifts a later key into slot i: look at it again */
			continue;
		}
		r->aborted = 1;
		i++;
	}
	for (uint32_t i = 0; i < c->sub_map.cap; i++)
		if (c->sub_map.keys[i]) {
			hm_sub *s = hm_slab_at(&c->subs, c->sub_map.vals[i]);
			if (s->kind == HM_OP_SEND && s->state == SUB_WAITING)
				s->aborted = 1; /* quiet: its outcome is dropped; else its RPC is born aborted */
		}
	/* outcomes of quiet sends already queued */
	for (uint32_t k = 0; k < c->ready_len; k++) {
		hm_item *it = &c->ready[(c->ready_head + k) & (c->ready_cap - 1)];
		if (it->type == ITEM_MSG && (it->msg.kind == HOMA_MSG_RESPONSE ||
					     (it->msg.kind == HOMA_MSG_FAILED && it->msg.refused == 0))) {
			hm_drop_msg(c, &it->msg);
			it->type = ITEM_NONE;
		}
	}
}
