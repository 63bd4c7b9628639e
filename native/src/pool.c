/*
 * pool.c: the receive pool's pages (python's pool.py): those the daemon
 * handed this worker (held), their release by the caller, and their
 * return to the daemon. Released runs are merged and given back in
 * batches: riding on the next Send or Reply where the daemon takes them
 * there (FeatureReturnOnSubmit), otherwise, or once HM_HOLD_RUNS wait, or
 * before any wait sleeps, as ReturnPages entries pushed with one tail
 * store.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int hm_pages_free(homa_client *c, uint32_t page, uint32_t pages)
{
	for (uint32_t i = 0; i < pages; i++)
		if (c->pages[page + i] != PAGE_DAEMON)
			return 0;
	return 1;
}

void hm_mark_held(homa_client *c, uint32_t page, uint32_t pages)
{
	memset(c->pages + page, PAGE_HELD, pages); /* callers found them the daemon's */
	c->pages_held += pages;
}

/* Queues [page, +pages) (held) to go back, merged with the last run when
 * adjacent; the pages are marked returning. 0, or -1 out of memory (they
 * stay held). */
static int append_run(homa_client *c, hm_run r)
{
	if (c->nreturns == c->returns_cap) {
		hm_run *n = realloc(c->returns, 2 * c->returns_cap * sizeof(*n));
		if (!n)
			return -1;
		c->returns = n;
		c->returns_cap *= 2;
	}
	c->returns[c->nreturns++] = r;
	c->returns_pages += r.pages;
	return 0;
}

int hm_return_later(homa_client *c, uint32_t page, uint32_t pages)
{
	if (c->nreturns) {
		hm_run *last = &c->returns[c->nreturns - 1];
		if (last->page + last->pages == page && (uint64_t)last->pages + pages < (1u << 30)) {
			last->pages += pages;
			c->returns_pages += pages;
			goto mark;
		}
		if (page + pages == last->page && (uint64_t)last->pages + pages < (1u << 30)) {
			last->page = page;
			last->pages += pages;
			c->returns_pages += pages;
			goto mark;
		}
	}
	if (append_run(c, (hm_run){page, pages}))
		return -1;
mark:
	memset(c->pages + page, PAGE_RETURNING, pages);
	return 0;
}

/* A message's pages, if it holds them all (a handle the library made and
 * not yet released): 1 and the run, else 0. */
static int msg_run(homa_client *c, const homa_msg *m, uint32_t *page, uint32_t *pages)
{
	if ((m->kind != HOMA_MSG_REQUEST && m->kind != HOMA_MSG_RESPONSE) || m->handle == 0)
		return 0;
	uint64_t p = m->handle >> 32, n = m->handle & 0xffffffffu;
	if (n == 0 || p >= c->lay.pool_pages || n > c->lay.pool_pages - p)
		return 0;
	for (uint64_t i = p; i < p + n; i++)
		if (c->pages[i] != PAGE_HELD)
			return 0;
	*page = (uint32_t)p;
	*pages = (uint32_t)n;
	return 1;
}

void hm_drop_msg(homa_client *c, homa_msg *m)
{
	uint32_t page, pages;
	if (msg_run(c, m, &page, &pages)) {
		hm_return_later(c, page, pages);
		if (c->messages_alive)
			c->messages_alive--;
	}
	memset(m, 0, sizeof(*m));
}

/* Pushes ReturnPages entries for the queued runs (all, or only when the
 * daemon takes no runs on submissions or too many wait), in bursts with
 * one tail store each. 0, or a status when the ring stays full. */
int hm_flush_returns(homa_client *c, int all)
{
	if (!c->nreturns || c->closed || c->dead)
		return 0;
	/* runs wait for a Send or Reply to ride on, but not many, and never a
	 * quarter of the pool: a small pool must not starve on pages held back */
	if (!all && (c->features & HM_FEATURE_RETURN_ON_SUBMIT) && c->nreturns < HM_HOLD_RUNS &&
	    c->returns_pages * 4 < c->lay.pool_pages)
		return 0;
	while (c->nreturns) {
		uint8_t slots[16 * HM_ENTRY_SIZE];
		unsigned k = c->nreturns < 16 ? c->nreturns : 16;
		for (unsigned i = 0; i < k; i++) {
			hm_run r = c->returns[c->nreturns - 1 - i];
			hm_entry e = {.op = HM_OP_RETURN_PAGES,
				      .cookie = HM_RETURN_TAG | (uint64_t)r.page << 32 | r.pages,
				      .page = r.page,
				      .pages = r.pages};
			hm_entry_encode(&e, slots + (size_t)i * HM_ENTRY_SIZE);
		}
		unsigned n = hm_prod_push(&c->sq, slots, k);
		for (unsigned i = 0; i < n; i++) {
			hm_run r = c->returns[--c->nreturns];
			c->returns_pages -= r.pages;
			memset(c->pages + r.page, PAGE_DAEMON, r.pages);
			c->pages_held -= r.pages;
			c->st.page_returns++;
		}
		c->st.submissions += n;
		if (n)
			hm_ring_bell(c);
		if (n < k) {
			/* the ring is full: one at a time through hm_push, which reads
			 * completions and waits for room */
			/* taken off first: hm_push reads completions, which may queue runs */
			hm_run r = c->returns[--c->nreturns];
			c->returns_pages -= r.pages;
			hm_entry e = {.op = HM_OP_RETURN_PAGES,
				      .cookie = HM_RETURN_TAG | (uint64_t)r.page << 32 | r.pages,
				      .page = r.page,
				      .pages = r.pages};
			int rc = hm_push(c, &e);
			if (rc) {
				if (append_run(c, r)) /* no memory: the run stays marked returning, lost to both sides */
					c->st.page_return_errors++;
				return rc;
			}
			memset(c->pages + r.page, PAGE_DAEMON, r.pages);
			c->pages_held -= r.pages;
			c->st.page_returns++;
		}
	}
	return 0;
}

void hm_ride(homa_client *c, hm_entry *e, hm_sub *s)
{
	if (!(c->features & HM_FEATURE_RETURN_ON_SUBMIT) || !c->nreturns)
		return;
	hm_run r = c->returns[--c->nreturns];
	c->returns_pages -= r.pages;
	e->page = r.page;
	e->pages = r.pages;
	s->ride_page = r.page;
	s->ride_pages = r.pages;
	memset(c->pages + r.page, PAGE_DAEMON, r.pages);
	c->pages_held -= r.pages;
	c->st.page_returns++;
}

void hm_unride(homa_client *c, hm_entry *e, hm_sub *s)
{
	if (!e->pages)
		return;
	hm_mark_held(c, e->page, e->pages);
	hm_return_later(c, e->page, e->pages);
	c->st.page_returns--;
	e->page = e->pages = 0;
	s->ride_page = s->ride_pages = 0;
}

/* Runs released while another thread held the lock (homa_msg_release). */
void hm_take_remote_releases(homa_client *c)
{
	pthread_mutex_lock(&c->rel_mu);
	for (uint32_t i = 0; i < c->rel_n; i++) {
		homa_msg m = {.kind = HOMA_MSG_REQUEST,
			      .handle = (uint64_t)c->rel_runs[i].page << 32 | c->rel_runs[i].pages};
		hm_drop_msg(c, &m);
	}
	c->rel_n = 0;
	atomic_store_explicit(&c->rel_pending, 0, memory_order_release);
	pthread_mutex_unlock(&c->rel_mu);
}

HM_EXPORT void homa_msg_release(homa_client *c, homa_msg *m)
{
	if (!m)
		return;
	if (!c || m->kind == HOMA_MSG_FAILED || m->handle == 0) {
		memset(m, 0, sizeof(*m));
		return;
	}
	if (pthread_mutex_trylock(&c->mu) == 0) {
		if (!c->closed)
			hm_drop_msg(c, m);
		pthread_mutex_unlock(&c->mu);
		memset(m, 0, sizeof(*m));
		return;
	}
	/* another thread holds the client, perhaps in a wait: leave the run
	 * for it and wake it to give the pages back */
	pthread_mutex_lock(&c->rel_mu);
	if (c->rel_n == c->rel_cap) {
		uint32_t ncap = c->rel_cap ? 2 * c->rel_cap : 16;
		hm_run *n = realloc(c->rel_runs, ncap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&c->rel_mu);
			pthread_mutex_lock(&c->mu); /* no memory: wait for the lock instead */
			if (!c->closed)
				hm_drop_msg(c, m);
			pthread_mutex_unlock(&c->mu);
			memset(m, 0, sizeof(*m));
			return;
		}
		c->rel_runs = n;
		c->rel_cap = ncap;
	}
	c->rel_runs[c->rel_n++] = (hm_run){(uint32_t)(m->handle >> 32), (uint32_t)m->handle};
	atomic_store_explicit(&c->rel_pending, 1, memory_order_release);
	pthread_mutex_unlock(&c->rel_mu);
	hm_signal(c);
	memset(m, 0, sizeof(*m));
}
