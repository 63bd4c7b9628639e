/*
 * entry.c: the ring entries of shm/entry.go. Bytes are put and got one at
 * a time in little-endian order, so the code means the same on any host;
 * the compiler turns each into one load or store on x86-64 and arm64.
 */
#include "entry.h"

#include <stdio.h>
#include <string.h>

/* Offsets of the fields (shm/entry.go's table). */
enum {
	ENT_OP = 0,
	ENT_FLAGS = 1,
	ENT_PORT = 2,
	ENT_LENGTH = 4,
	ENT_COOKIE = 8,
	ENT_RPC = 16,
	ENT_PEER_IP = 24,
	ENT_PEER_PORT = 28,
	ENT_ERR = 30,
	ENT_OFFSET = 32,
	ENT_PAGE = 40,
	ENT_PAGES = 44,
	ENT_PEER_IP6 = 48,
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

void hm_entry_encode(const hm_entry *e, uint8_t s[HM_ENTRY_SIZE])
{
	s[ENT_OP] = e->op;
	s[ENT_FLAGS] = e->flags;
	put16(s + ENT_PORT, e->port);
	put32(s + ENT_LENGTH, e->length);
	put64(s + ENT_COOKIE, e->cookie);
	put64(s + ENT_RPC, e->rpc);
	memcpy(s + ENT_PEER_IP, e->ip, 4);
	put16(s + ENT_PEER_PORT, e->peer_port);
	put16(s + ENT_ERR, e->err);
	put64(s + ENT_OFFSET, e->offset);
	put32(s + ENT_PAGE, e->page);
	put32(s + ENT_PAGES, e->pages);
	memcpy(s + ENT_PEER_IP6, e->ip6, 16);
}

void hm_entry_decode(const uint8_t s[HM_ENTRY_SIZE], hm_entry *e)
{
	e->op = s[ENT_OP];
	e->flags = s[ENT_FLAGS];
	e->port = get16(s + ENT_PORT);
	e->length = get32(s + ENT_LENGTH);
	e->cookie = get64(s + ENT_COOKIE);
	e->rpc = get64(s + ENT_RPC);
	memcpy(e->ip, s + ENT_PEER_IP, 4);
	e->peer_port = get16(s + ENT_PEER_PORT);
	e->err = get16(s + ENT_ERR);
	e->offset = get64(s + ENT_OFFSET);
	e->page = get32(s + ENT_PAGE);
	e->pages = get32(s + ENT_PAGES);
	memcpy(e->ip6, s + ENT_PEER_IP6, 16);
}

/* ErrCode values (shm.ErrCode). */
enum {
	CODE_NONE = 0,
	CODE_BAD_OP = 1,
	CODE_BAD_FLAGS = 2,
	CODE_BAD_RESERVED = 3,
	CODE_BAD_PORT = 4,
	CODE_BAD_PEER = 5,
	CODE_BAD_LENGTH = 6,
	CODE_BAD_ARENA = 7,
	CODE_BAD_PAGE = 8,
	CODE_BAD_RPC = 9,
	CODE_BAD_COMP_ERROR = 10,
	CODE_BAD_END = 11,
	CODE_TIMEOUT = 16,
	CODE_END = 27,
};

static int code_known(unsigned e) { return e < CODE_BAD_END || (e >= CODE_TIMEOUT && e < CODE_END); }

static int zero(const uint8_t *p, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static int in_arena(uint64_t off, uint64_t n, const hm_limits *lim)
{
	return off <= lim->arena_size && n <= lim->arena_size - off;
}

static int in_pool(uint32_t page, uint32_t pages, const hm_limits *lim)
{
	return pages > 0 && (uint64_t)page < lim->pool_pages && (uint64_t)pages <= lim->pool_pages - page;
}

int hm_parse_completion(const uint8_t src[HM_ENTRY_SIZE], const hm_limits *lim, hm_entry *c)
{
	hm_entry_decode(src, c);
	if (c->op == 0 || c->op >= HM_COMP_END)
		return CODE_BAD_OP;
	if (c->flags & ~HM_COMP_FLAG_RELEASED)
		return CODE_BAD_FLAGS;
	if (!zero(c->ip, 4) && !zero(c->ip6, 16))
		return CODE_BAD_PEER;
	if ((c->op == HM_COMP_ERROR) != (c->err != 0) || !code_known(c->err))
		return CODE_BAD_COMP_ERROR;
	switch (c->op) {
	case HM_COMP_REQUEST:
	case HM_COMP_RESPONSE:
		if (c->length == 0 || c->length > lim->max_message)
			return CODE_BAD_LENGTH;
		if (!in_pool(c->page, c->pages, lim) || (uint64_t)c->length > (uint64_t)c->pages * 65536)
			return CODE_BAD_PAGE;
		break;
	case HM_COMP_RELEASED:
		if (!in_arena(c->offset, c->length, lim))
			return CODE_BAD_ARENA;
		break;
	}
	return CODE_NONE;
}

/* Which fields each op uses (shm's opUses). */
enum { USE_PORT = 1, USE_LENGTH = 2, USE_RPC = 4, USE_PEER = 8, USE_OFFSET = 16, USE_PAGES = 32 };

static const uint8_t op_uses[HM_OP_END] = {
	[HM_OP_BIND] = USE_PORT,
	[HM_OP_SEND] = USE_PEER | USE_OFFSET | USE_LENGTH | USE_PAGES,
	[HM_OP_REPLY] = USE_RPC | USE_PEER | USE_OFFSET | USE_LENGTH | USE_PAGES,
	[HM_OP_ABORT] = USE_RPC,
	[HM_OP_ABORT_ALL] = 0,
	[HM_OP_RETURN_PAGES] = USE_PAGES,
};

static int one_peer(const uint8_t ip[4], const uint8_t ip6[16])
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	int v4 = !zero(ip, 4), v6 = !zero(ip6, 16);
	return v4 != v6 && !(v6 && memcmp(ip6, mapped, 12) == 0);
}

int hm_parse_submission(const uint8_t src[HM_ENTRY_SIZE], const hm_limits *lim, hm_entry *s)
{
	hm_entry_decode(src, s);
	if (s->op == 0 || s->op >= HM_OP_END)
		return CODE_BAD_OP;
	if (s->err != 0)
		return CODE_BAD_RESERVED;
	if ((s->flags & ~(HM_SUB_FLAG_QUIET | HM_SUB_FLAG_PRIORITY | HM_SUB_PRIORITY_MASK)) ||
	    (s->flags && s->op != HM_OP_SEND && s->op != HM_OP_REPLY) ||
	    ((s->flags & (HM_SUB_FLAG_PRIORITY | HM_SUB_PRIORITY_MASK)) && s->op != HM_OP_SEND) ||
	    ((s->flags & HM_SUB_PRIORITY_MASK) && !(s->flags & HM_SUB_FLAG_PRIORITY)))
		return CODE_BAD_FLAGS;
	unsigned use = op_uses[s->op], set = 0;
	if (s->port)
		set |= USE_PORT;
	if (s->length)
		set |= USE_LENGTH;
	if (s->rpc)
		set |= USE_RPC;
	if (!zero(s->ip, 4) || !zero(s->ip6, 16) || s->peer_port)
		set |= USE_PEER;
	if (s->offset)
		set |= USE_OFFSET;
	if (s->page || s->pages)
		set |= USE_PAGES;
	if (set & ~use)
		return CODE_BAD_RESERVED;
	if ((use & USE_PORT) && (s->port == 0 || s->port > HM_MAX_SERVER_PORT))
		return CODE_BAD_PORT;
	if (use & USE_PEER) {
		if (!one_peer(s->ip, s->ip6))
			return CODE_BAD_PEER;
		if (s->peer_port == 0 || (s->op == HM_OP_SEND && s->peer_port > HM_MAX_SERVER_PORT))
			return CODE_BAD_PORT;
	}
	if (use & USE_LENGTH) {
		if (s->length == 0 || s->length > lim->max_message)
			return CODE_BAD_LENGTH;
		if (!in_arena(s->offset, s->length, lim))
			return CODE_BAD_ARENA;
	}
	if (use & USE_RPC) {
		int odd = (s->rpc & 1) == 1;
		if ((s->op == HM_OP_REPLY) != odd || s->rpc == 0)
			return CODE_BAD_RPC;
	}
	if ((use & USE_PAGES) && !in_pool(s->page, s->pages, lim) &&
	    (s->op == HM_OP_RETURN_PAGES || s->page || s->pages))
		return CODE_BAD_PAGE;
	return CODE_NONE;
}

static const char *const err_names[CODE_END] = {
	[0] = "none",
	[1] = "bad op",
	[2] = "bad flags",
	[3] = "nonzero reserved or unused field",
	[4] = "bad port",
	[5] = "bad peer address",
	[6] = "bad length",
	[7] = "range outside the transmit arena",
	[8] = "page range outside the receive pool",
	[9] = "bad RPC id",
	[10] = "bad error code",
	[16] = "timeout",
	[17] = "peer unreachable",
	[18] = "port unreachable",
	[19] = "aborted",
	[20] = "no buffer space",
	[21] = "no such RPC",
	[22] = "port in use",
	[23] = "worker limit reached",
	[24] = "peer restarted",
	[25] = "closed",
	[26] = "message too long for the peer (kernel Homa's 1,000,000 bytes)",
};

const char *hm_err_name(unsigned code, char buf[16])
{
	if (code < CODE_END && err_names[code])
		return err_names[code];
	snprintf(buf, 16, "error(%u)", code & 0xffff);
	return buf;
}

static const char *const comp_names[HM_COMP_END] = {
	[HM_COMP_ACCEPTED] = "accepted", [HM_COMP_REQUEST] = "request", [HM_COMP_RESPONSE] = "response",
	[HM_COMP_ERROR] = "error",       [HM_COMP_RELEASED] = "released",
};

const char *hm_comp_name(unsigned op, char buf[16])
{
	if (op > 0 && op < HM_COMP_END)
		return comp_names[op];
	snprintf(buf, 16, "comp(%u)", op & 0xff);
	return buf;
}

void hm_entry_format(const hm_entry *c, char *buf, unsigned len)
{
	char nb[16];
	snprintf(buf, len,
		 "{op %s flags %u port %u length %u cookie %llu rpc %llu ip %u.%u.%u.%u ip6 %s peer_port %u err %u "
		 "offset %llu page %u pages %u}",
		 hm_comp_name(c->op, nb), c->flags, c->port, c->length, (unsigned long long)c->cookie,
		 (unsigned long long)c->rpc, c->ip[0], c->ip[1], c->ip[2], c->ip[3], zero(c->ip6, 16) ? "::" : "set",
		 c->peer_port, c->err, (unsigned long long)c->offset, c->page, c->pages);
}
