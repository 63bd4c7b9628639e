/*
 * table.c: see table.h.
 */
#include "table.h"

#include <stdlib.h>
#include <string.h>

static uint32_t slot_of(uint64_t k, uint32_t mask)
{
	k ^= k >> 33; /* a 64-bit mix (murmur3's finaliser): cookies and ids are sequential */
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t)k & mask;
}

int hm_map_init(hm_map *m, uint32_t cap)
{
	m->cap = cap;
	m->len = 0;
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		hm_map_fini(m);
		return -1;
	}
	return 0;
}

void hm_map_fini(hm_map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->len = 0;
}

int64_t hm_map_get(const hm_map *m, uint64_t key)
{
	uint32_t mask = m->cap - 1;
	for (uint32_t i = slot_of(key, mask);; i = (i + 1) & mask) {
		if (m->keys[i] == key)
			return m->vals[i];
		if (m->keys[i] == 0)
			return -1;
	}
}

static void insert(uint64_t *keys, uint32_t *vals, uint32_t mask, uint64_t key, uint32_t val)
{
	uint32_t i = slot_of(key, mask);
	while (keys[i] != 0 && keys[i] != key)
		i = (i + 1) & mask;
	keys[i] = key;
	vals[i] = val;
}

static int grow(hm_map *m)
{
	uint32_t ncap = m->cap * 2;
	uint64_t *nk = calloc(ncap, sizeof(*nk));
	uint32_t *nv = calloc(ncap, sizeof(*nv));
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -1;
	}
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			insert(nk, nv, ncap - 1, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	m->keys = nk;
	m->vals = nv;
	m->cap = ncap;
	return 0;
}

int hm_map_put(hm_map *m, uint64_t key, uint32_t val)
{
	if (key == 0)
		return -1;
	if ((m->len + 1) * 2 > m->cap && grow(m))
		return -1;
	uint32_t mask = m->cap - 1, i = slot_of(key, mask);
	while (m->keys[i] != 0 && m->keys[i] != key)
		i = (i + 1) & mask;
	if (m->keys[i] == 0)
		m->len++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

int hm_map_del(hm_map *m, uint64_t key)
{
	if (key == 0)
		return 0;
	uint32_t mask = m->cap - 1, i = slot_of(key, mask);
	while (m->keys[i] != key) {
		if (m->keys[i] == 0)
			return 0;
		i = (i + 1) & mask;
	}
	/* backward shift: move later members of the cluster into the hole when
	 * their home slot does not lie between the hole and them */
	uint32_t hole = i;
	for (uint32_t j = (i + 1) & mask; m->keys[j] != 0; j = (j + 1) & mask) {
		uint32_t home = slot_of(m->keys[j], mask);
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			m->keys[hole] = m->keys[j];
			m->vals[hole] = m->vals[j];
			hole = j;
		}
	}
	m->keys[hole] = 0;
	m->len--;
	return 1;
}

static void link_free(hm_slab *s, uint32_t from)
{
	for (uint32_t i = s->cap; i-- > from;) {
		memcpy(hm_slab_at(s, i), &s->free, sizeof(uint32_t));
		s->free = i;
	}
}

int hm_slab_init(hm_slab *s, size_t size, uint32_t cap)
{
	s->size = size < sizeof(uint32_t) ? sizeof(uint32_t) : size;
	s->cap = cap;
	s->used = 0;
	s->free = UINT32_MAX;
	s->recs = calloc(cap, s->size);
	if (!s->recs)
		return -1;
	link_free(s, 0);
	return 0;
}

void hm_slab_fini(hm_slab *s)
{
	free(s->recs);
	s->recs = NULL;
	s->cap = s->used = 0;
}

int64_t hm_slab_get(hm_slab *s)
{
	if (s->free == UINT32_MAX) {
		if (s->cap >= UINT32_MAX / 2)
			return -1;
		void *n = realloc(s->recs, (size_t)s->cap * 2 * s->size);
		if (!n)
			return -1;
		s->recs = n;
		uint32_t old = s->cap;
		s->cap *= 2;
		memset(hm_slab_at(s, old), 0, (size_t)old * s->size);
		link_free(s, old);
	}
	uint32_t i = s->free;
	memcpy(&s->free, hm_slab_at(s, i), sizeof(uint32_t));
	s->used++;
	return i;
}

void hm_slab_put(hm_slab *s, uint32_t i)
{
	memcpy(hm_slab_at(s, i), &s->free, sizeof(uint32_t));
	s->free = i;
	s->used--;
}
