/*
 * client.c: a session's life (close, shutdown, destroy), the lock, the
 * lock-free wake-ups, and what a client reports (layout, stats, last_bad).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int64_t hm_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

void hm_lock(homa_client *c)
{
	pthread_mutex_lock(&c->mu);
	if (atomic_load_explicit(&c->rel_pending, memory_order_acquire))
		hm_take_remote_releases(c);
}

void hm_unlock(homa_client *c) { pthread_mutex_unlock(&c->mu); }

int hm_check_open(homa_client *c)
{
	if (c->closed || atomic_load_explicit(&c->closing, memory_order_relaxed))
		return HOMA_ECLOSED;
	if (c->dead)
		return HOMA_EDEAD;
	return 0;
}

/* hm_signal writes the eventfd, unless homa_close closes it meanwhile:
 * efd_users keeps close from closing it (and the number being reused)
 * while a writer may still use it. No lock; no allocation. */
void hm_signal(homa_client *c)
{
	atomic_fetch_add(&c->efd_users, 1);
	int fd = atomic_load(&c->efd);
	if (fd >= 0) {
		uint64_t one = 1;
		ssize_t r = write(fd, &one, sizeof(one)); /* EAGAIN: the counter is full, so it is readable */
		(void)r;
	}
	atomic_fetch_sub(&c->efd_users, 1);
}

HM_EXPORT void homa_wake(homa_client *c)
{
	if (!c)
		return;
	atomic_store(&c->woken, 1);
	hm_signal(c);
}

HM_EXPORT void homa_shutdown(homa_client *c)
{
	if (!c)
		return;
	atomic_store(&c->closing, 1);
	hm_signal(c);
}

HM_EXPORT int homa_fd(const homa_client *c) { return c ? atomic_load(&((homa_client *)c)->efd) : -1; }

/* Drops what the ready queue holds (homa_close). */
static void clear_ready(homa_client *c)
{
	homa_msg m;
	while (c->ready_len) {
		int rc = hm_ready_pop(c, &m);
		if (rc < 0)
			break;
		hm_drop_msg(c, &m);
	}
}

HM_EXPORT void homa_close(homa_client *c)
{
	if (!c)
		return;
	atomic_store(&c->closing, 1);
	hm_signal(c); /* a wait of another thread returns HOMA_ECLOSED and lets go of the lock */
	pthread_mutex_lock(&c->mu);
	if (c->closed) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	c->closed = 1;
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
	if (c->bell >= 0) /* pushes ring it under the lock: none runs now */
		close(c->bell);
	c->bell = -1;
	int fd = atomic_exchange(&c->efd, -1);
	while (atomic_load(&c->efd_users)) /* a waker between its load and its write */
		sched_yield();
	if (fd >= 0)
		close(fd);
	clear_ready(c);
	c->nreturns = 0;
	c->returns_pages = 0;
	pthread_mutex_unlock(&c->mu);
}

void hm_free_state(homa_client *c)
{
	hm_arena_fini(&c->arena);
	hm_slab_fini(&c->subs);
	hm_slab_fini(&c->rpcs);
	hm_slab_fini(&c->reqs);
	hm_map_fini(&c->sub_map);
	hm_map_fini(&c->rpc_map);
	hm_map_fini(&c->req_map);
	free(c->ready);
	free(c->pages);
	free(c->returns);
	free(c->rel_runs);
	if (c->bell >= 0) /* an attach that failed after it got the doorbell */
		close(c->bell);
	if (c->region)
		munmap(c->region, c->region_len);
	free(c);
}

HM_EXPORT void homa_destroy(homa_client *c)
{
	if (!c)
		return;
	homa_close(c);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->rel_mu);
	hm_free_state(c);
}

HM_EXPORT uint32_t homa_max_message(const homa_client *c) { return c ? c->lim.max_message : 0; }
HM_EXPORT uint64_t homa_arena_size(const homa_client *c) { return c ? c->lay.arena_size : 0; }
HM_EXPORT uint64_t homa_pool_pages(const homa_client *c) { return c ? c->lay.pool_pages : 0; }

HM_EXPORT void homa_get_layout(const homa_client *c, homa_layout *l)
{
	if (c && l)
		*l = c->lay;
}

HM_EXPORT int homa_host_info_get(const homa_client *c, homa_host_info *h)
{
	if (!c || !h || h->size < 8)
		return HOMA_EINVAL;
	uint32_t want = h->size < sizeof(*h) ? h->size : (uint32_t)sizeof(*h);
	homa_host_info t;
	memset(&t, 0, sizeof(t));
	const hm_host *s = &c->host; /* set at attach, then read-only: no lock */
	if (s->said) {
		static const uint8_t zero[16];
		t.link_mbps = s->link_mbps;
		t.mtu = s->mtu;
		if (memcmp(s->ipv4, zero, 4) != 0) {
			t.ipv4.family = 4;
			memcpy(t.ipv4.ip, s->ipv4, 4);
		}
		if (memcmp(s->ipv6, zero, 16) != 0) {
			t.ipv6.family = 6;
			memcpy(t.ipv6.ip, s->ipv6, 16);
		}
	}
	t.size = want;
	memcpy(h, &t, want);
	return s->said ? 0 : HOMA_ENOTSUP;
}

HM_EXPORT void *homa_region(const homa_client *c, size_t *size)
{
	if (!c)
		return NULL;
	if (size)
		*size = c->region_len;
	return c->region;
}

HM_EXPORT int homa_stats_get(homa_client *c, homa_stats *s)
{
	if (!c || !s || s->size < 8)
		return HOMA_EINVAL;
	uint32_t want = s->size < sizeof(*s) ? s->size : (uint32_t)sizeof(*s);
	hm_lock(c);
	homa_stats t = c->st;
	t.sq_corrupt = c->sq.corrupt;
	t.cq_corrupt = c->cq.corrupt;
	t.arena_size = c->arena.size;
	t.arena_used = c->arena.used;
	t.arena_ranges = c->arena.ranges;
	t.arena_largest_free = hm_arena_largest_free(&c->arena);
	t.pool_pages = c->lay.pool_pages;
	t.pool_pages_held = c->pages_held;
	t.messages_alive = c->messages_alive;
	uint64_t out = 0, pend = 0, ready = 0;
	for (uint32_t i = 0; i < c->rpc_map.cap; i++)
		if (c->rpc_map.keys[i]) {
			hm_rpc *r = hm_slab_at(&c->rpcs, c->rpc_map.vals[i]);
			out += !r->has_outcome;
		}
	for (uint32_t i = 0; i < c->sub_map.cap; i++)
		if (c->sub_map.keys[i]) {
			hm_sub *sb = hm_slab_at(&c->subs, c->sub_map.vals[i]);
			pend += sb->state == SUB_WAITING;
			out += sb->state == SUB_WAITING && sb->quiet && sb->kind == HM_OP_SEND && !sb->aborted;
		}
	for (uint32_t i = 0; i < c->ready_len; i++) {
		hm_item *it = &c->ready[(c->ready_head + i) & (c->ready_cap - 1)];
		if (it->type == ITEM_MSG)
			ready++;
		else if (it->type == ITEM_RPC) {
			hm_rpc *r = hm_slab_at(&c->rpcs, it->idx);
			ready += r->gen == it->gen;
		}
	}
	t.rpcs_outstanding = out;
	t.ready = ready;
	t.submissions_pending = pend;
	hm_unlock(c);
	t.size = want;
	memcpy(s, &t, want);
	return 0;
}

HM_EXPORT const char *homa_last_bad(homa_client *c, char *buf, size_t len)
{
	if (!buf || !len)
		return buf;
	buf[0] = 0;
	if (!c)
		return buf;
	hm_lock(c);
	size_t n = strlen(c->last_bad);
	if (n >= len)
		n = len - 1;
	memcpy(buf, c->last_bad, n);
	buf[n] = 0;
	hm_unlock(c);
	return buf;
}
