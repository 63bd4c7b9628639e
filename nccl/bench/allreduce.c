/*
 * allreduce.c: NCCL's ring all-reduce over host buffers, for perf nccl.
 *
 *   bench-allreduce --ranks N [--mode plugin|libhoma] [--plugin PATH]
 *                   [--min BYTES] [--max BYTES] [--iters K] [--warmup W]
 *
 * N forked ranks (2..8), rank r on the (r mod n)-th socket of
 * HARNESS_SOCKETS (or HOMA_NCCL_SOCKET), make a ring: each sends to its
 * successor and receives from its predecessor. An all-reduce of B bytes
 * (float32, summed on the CPU) is NCCL's ring: the buffer cut into N
 * chunks, a reduce-scatter of N-1 steps (receive a chunk, add it into
 * ours, send it on) then an all-gather of N-1 steps (receive a reduced
 * chunk, store it, send it on). Each chunk travels in slices of 512 KiB at
 * most, received into a 4 MiB buffer of 8 slots per connection, so up to 8
 * slices are in flight each way and a slice goes on as soon as the one it
 * depends on came in (the steps pipeline). Sends go straight from the
 * buffer (the plugin and libhoma copy at isend).
 *
 * Mode plugin: the plugin's v10 table (regMr, isend, irecv, test), loaded
 * with dlopen as the conformance harness does (tests/ranks.c). Mode
 * libhoma: the same ring and slices over libhoma in one session per rank:
 * a detached homa_send per slice to the successor's bound port (an 8-byte
 * message number before the data), requests and responses taken with
 * homa_receive_burst, a slice copied into its slot when its turn comes and
 * then answered with its number (libhoma sends no empty message), so at
 * most 8 are unanswered each way: the slots. The plugin's protocol (src/comm.c) is the model; the difference
 * between the modes is the plugin's cost.
 *
 * Sizes double from --min (8) to --max (64 MiB). Per size: --warmup
 * untimed all-reduces, then --iters timed ones, each after a barrier
 * (pipes), its time the slowest rank's; the result is checked against the
 * expected sum. One JSON line per size on stdout: ranks, mode, bytes,
 * iters, msgs (isends per rank per all-reduce), time_us (the median),
 * algbw_gbps (bytes / time, GB/s as nccl-tests), busbw_gbps (algbw x
 * 2(n-1)/n), cpu_s_per_gb (user + system seconds of all ranks over the
 * timed all-reduces, per GB reduced: bytes x iters).
 */
#include "ranks.h"

#include <homa.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS 8
#define SLOT_BYTES (512u << 10)
#define SLOT_FLOATS (SLOT_BYTES / sizeof(float))
#define HOLD 16 /* libhoma: requests held until their turn, by number */

/* ring: one rank's all-reduce, the same in both modes. */
typedef struct ring {
	int rank, n;
	float *data;     /* count floats, reduced in place */
	size_t count;    /* floats */
	size_t per;      /* floats per chunk: ceil(count / n) */
	uint64_t slices; /* slices per chunk (>= 1) */
	uint64_t total;  /* messages each way per all-reduce: 2(n-1) x slices */
	float *slots;    /* SLOTS x SLOT_BYTES: the receive buffer */
} ring;

/* transport: one mode's operations on message i of the current
 * all-reduce; each returns 1 done, 0 not yet (try again), -1 failed. */
typedef struct transport {
	int (*post)(void *t, uint64_t i, float *slot, size_t room);
	int (*send)(void *t, uint64_t i, const float *p, size_t bytes);
	int (*recv_done)(void *t, uint64_t i, float *slot, size_t *got);
	int (*send_done)(void *t, uint64_t i);
	void *t;
} transport;

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* chunk_of is the chunk message i carries: sent (send 1) or received. */
static int chunk_of(const ring *g, uint64_t i, int send)
{
	int s = (int)(i / g->slices), n = g->n;
	if (s < n - 1) /* reduce-scatter */
		return mod(g->rank - s - !send, n);
	s -= n - 1; /* all-gather */
	return mod(g->rank - s + send, n);
}

/* span is where message i's floats lie in data. */
static void span(const ring *g, uint64_t i, int send, size_t *off, size_t *len)
{
	size_t c = (size_t)chunk_of(g, i, send), k = (size_t)(i % g->slices);
	size_t lo = c * g->per + k * SLOT_FLOATS, end = (c + 1) * g->per;
	if (end > g->count)
		end = g->count;
	*off = lo < end ? lo : 0;
	*len = lo < end ? (end - lo < SLOT_FLOATS ? end - lo : SLOT_FLOATS) : 0;
}

/* consume reduces (reduce-scatter) or stores (all-gather) message i. */
static void consume(ring *g, uint64_t i, const float *slot)
{
	size_t off, len;
	span(g, i, 0, &off, &len);
	float *d = g->data + off;
	if (i / g->slices < (uint64_t)g->n - 1)
		for (size_t j = 0; j < len; j++)
			d[j] += slot[j];
	else
		memcpy(d, slot, len * sizeof(float));
}

/* allreduce runs one all-reduce of g over t. */
static int allreduce(ring *g, const transport *t)
{
	uint64_t sent = 0, sdone = 0, posted = 0, rdone = 0, total = g->total;
	int64_t t0 = h_now();
	while (rdone < total || sdone < total) {
		uint64_t before = sent + sdone + posted + rdone;
		while (posted < total && posted < rdone + SLOTS) {
			int rc = t->post(t->t, posted, g->slots + (posted % SLOTS) * SLOT_FLOATS, SLOT_BYTES);
			if (rc < 0)
				return -1;
			if (!rc)
				break;
			posted++;
		}
		while (sent < total && sent < sdone + SLOTS && (sent < g->slices || sent - g->slices < rdone)) {
			size_t off, len;
			span(g, sent, 1, &off, &len);
			int rc = t->send(t->t, sent, g->data + off, len * sizeof(float));
			if (rc < 0)
				return -1;
			if (!rc)
				break;
			sent++;
		}
		while (rdone < posted) {
			float *slot = g->slots + (rdone % SLOTS) * SLOT_FLOATS;
			size_t got = 0, off, len;
			int rc = t->recv_done(t->t, rdone, slot, &got);
			if (rc < 0)
				return -1;
			if (!rc)
				break;
			span(g, rdone, 0, &off, &len);
			if (got != len * sizeof(float)) {
				fprintf(stderr, "    rank %d: message %llu: %zu bytes, want %zu\n", g->rank,
					(unsigned long long)rdone, got, len * sizeof(float));
				return -1;
			}
			consume(g, rdone, slot);
			rdone++;
		}
		while (sdone < sent) {
			int rc = t->send_done(t->t, sdone);
			if (rc < 0)
				return -1;
			if (!rc)
				break;
			sdone++;
		}
		if (sent + sdone + posted + rdone == before)
			sched_yield(); /* nothing moved: let the progress thread or daemon run where cores are few */
		if (h_now() - t0 > 60000000000ll) {
			fprintf(stderr, "    rank %d: an all-reduce ran past 60 s (%llu of %llu sent, %llu received)\n",
				g->rank, (unsigned long long)sent, (unsigned long long)total, (unsigned long long)rdone);
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------- plugin */

typedef struct plugin_t {
	void *send, *recv, *listen;
	void *data_mh, *slots_mh; /* regMr of data on send, of slots on recv */
	void *sreq[SLOTS], *rreq[SLOTS];
} plugin_t;

static int p_post(void *t, uint64_t i, float *slot, size_t room)
{
	plugin_t *p = t;
	void **req = &p->rreq[i % SLOTS];
	if (h_irecv(p->recv, slot, room, p->slots_mh, req) != ncclSuccess)
		return -1;
	return *req != NULL;
}

static int p_send(void *t, uint64_t i, const float *d, size_t bytes)
{
	plugin_t *p = t;
	void **req = &p->sreq[i % SLOTS];
	*req = NULL;
	if (h_isend(p->send, (void *)d, bytes, p->data_mh, req) != ncclSuccess)
		return -1;
	return *req != NULL;
}

static int p_test(void *req, size_t *got)
{
	int done = 0, size = 0;
	if (h_test(req, &done, &size) != ncclSuccess)
		return -1;
	if (done && got)
		*got = (size_t)size;
	return done;
}

static int p_recv_done(void *t, uint64_t i, float *slot, size_t *got)
{
	(void)slot;
	return p_test(((plugin_t *)t)->rreq[i % SLOTS], got);
}

static int p_send_done(void *t, uint64_t i) { return p_test(((plugin_t *)t)->sreq[i % SLOTS], NULL); }

static int plugin_open(plugin_t *p, ring *g)
{
	memset(p, 0, sizeof *p);
	if (h_connect_pair((g->rank + 1) % g->n, mod(g->rank - 1, g->n), &p->send, &p->recv, &p->listen))
		return -1;
	if (h_regmr(p->send, g->data, g->count * sizeof(float), NCCL_PTR_HOST, &p->data_mh) != ncclSuccess ||
	    h_regmr(p->recv, g->slots, (size_t)SLOTS * SLOT_BYTES, NCCL_PTR_HOST, &p->slots_mh) != ncclSuccess) {
		fprintf(stderr, "    rank %d: regMr failed\n", g->rank);
		return -1;
	}
	return 0;
}

static void plugin_close(plugin_t *p)
{
	h_deregmr(p->send, p->data_mh);
	h_deregmr(p->recv, p->slots_mh);
	h_close_send(p->send);
	h_close_recv(p->recv);
	h_close_listen(p->listen);
}

/* ------------------------------------------------------------ libhoma */

typedef struct libhoma_t {
	homa_client *c;
	homa_addr succ;          /* the successor's bound port */
	uint64_t base;           /* the number of message 0 of this all-reduce */
	uint64_t answered[HOLD]; /* number + 1 of each send answered, by number mod HOLD */
	homa_msg held[HOLD];     /* requests not yet taken, by number mod HOLD */
	int rank;
} libhoma_t;

static int l_post(void *t, uint64_t i, float *slot, size_t room)
{
	(void)t, (void)i, (void)slot, (void)room;
	return 1; /* a slot is taken when its request's turn comes */
}

static int l_send(void *t, uint64_t i, const float *d, size_t bytes)
{
	libhoma_t *l = t;
	uint64_t seq = l->base + i;
	struct iovec iov[2] = {{&seq, sizeof seq}, {(void *)d, bytes}};
	int rc = homa_send(l->c, &l->succ, iov, bytes ? 2 : 1, seq, HOMA_SEND_DETACHED, NULL);
	if (rc == HOMA_EARENA || rc == HOMA_ESQFULL)
		return 0;
	if (rc) {
		fprintf(stderr, "    rank %d: homa_send: %s\n", l->rank, homa_strerror(rc));
		return -1;
	}
	return 1;
}

/* l_pump takes what came in: requests held by number, answers counted. */
static int l_pump(libhoma_t *l)
{
	homa_msg ms[32];
	int n = homa_receive_burst(l->c, ms, 32, 0);
	if (n == HOMA_ETIMEDOUT)
		return 0;
	if (n < 0) {
		fprintf(stderr, "    rank %d: homa_receive_burst: %s\n", l->rank, homa_strerror(n));
		return -1;
	}
	for (int k = 0; k < n; k++) {
		homa_msg *m = &ms[k];
		if (m->kind == HOMA_MSG_RESPONSE) {
			l->answered[m->tag % HOLD] = m->tag + 1;
			homa_msg_release(l->c, m);
			continue;
		}
		uint64_t seq;
		if (m->kind != HOMA_MSG_REQUEST || m->length < sizeof seq) {
			fprintf(stderr, "    rank %d: a message of kind %d, error %d, %u bytes\n", l->rank, m->kind, m->err,
				m->length);
			return -1;
		}
		memcpy(&seq, m->data, sizeof seq);
		homa_msg *h = &l->held[seq % HOLD];
		if (h->data) {
			fprintf(stderr, "    rank %d: message %llu came with %d held\n", l->rank, (unsigned long long)seq,
				HOLD);
			return -1;
		}
		*h = *m;
	}
	return 0;
}

static int l_recv_done(void *t, uint64_t i, float *slot, size_t *got)
{
	libhoma_t *l = t;
	uint64_t seq = l->base + i, have;
	homa_msg *h = &l->held[seq % HOLD];
	if (!h->data && l_pump(l))
		return -1;
	if (!h->data)
		return 0;
	memcpy(&have, h->data, sizeof have);
	if (have != seq)
		return 0; /* a later round's: its turn comes */
	*got = h->length - sizeof seq;
	if (*got > SLOT_BYTES) {
		fprintf(stderr, "    rank %d: message %llu of %zu bytes\n", l->rank, (unsigned long long)seq, *got);
		return -1;
	}
	memcpy(slot, h->data + sizeof seq, *got);
	struct iovec iov = {&seq, sizeof seq}; /* a reply holds a byte at least: the number */
	int rc = homa_reply(l->c, h, &iov, 1, HOMA_REPLY_DETACHED);
	homa_msg_release(l->c, h);
	memset(h, 0, sizeof *h);
	if (rc) {
		fprintf(stderr, "    rank %d: homa_reply: %s\n", l->rank, homa_strerror(rc));
		return -1;
	}
	return 1;
}

static int l_send_done(void *t, uint64_t i)
{
	libhoma_t *l = t;
	uint64_t seq = l->base + i;
	if (l->answered[seq % HOLD] != seq + 1 && l_pump(l))
		return -1;
	return l->answered[seq % HOLD] == seq + 1;
}

static int libhoma_open(libhoma_t *l, ring *g)
{
	memset(l, 0, sizeof *l);
	l->rank = g->rank;
	const char *path = getenv("HOMA_NCCL_SOCKET");
	if (!path)
		path = "/run/homa-dpdk/workers.sock";
	char err[256]; /* the default options: bind waits for its answer; a send for arena room */
	int rc = homa_attach(path, NULL, &l->c, err, sizeof err);
	if (rc) {
		fprintf(stderr, "    rank %d: attach %s: %s\n", g->rank, path, err);
		return -1;
	}
	homa_host_info hi = {.size = sizeof hi};
	if ((rc = homa_host_info_get(l->c, &hi))) {
		fprintf(stderr, "    rank %d: %s: host info: %s\n", g->rank, path, homa_strerror(rc));
		return -1;
	}
	homa_addr self = hi.ipv4.family == 4 ? hi.ipv4 : hi.ipv6;
	rc = HOMA_ERR_PORT_IN_USE;
	for (int i = 0; i < 64 && rc == HOMA_ERR_PORT_IN_USE; i++) {
		self.port = (uint16_t)(0x5000 + ((unsigned)getpid() * 131u + (unsigned)i * 7u) % 4096u);
		rc = homa_bind(l->c, self.port);
	}
	if (rc) {
		fprintf(stderr, "    rank %d: bind: %s\n", g->rank, homa_strerror(rc));
		return -1;
	}
	char mine[NCCL_NET_HANDLE_MAXSIZE] = {0}, theirs[NCCL_NET_HANDLE_MAXSIZE];
	memcpy(mine, &self, sizeof self);
	h_put_handle(mod(g->rank - 1, g->n), mine);
	h_get_handle((g->rank + 1) % g->n, theirs);
	memcpy(&l->succ, theirs, sizeof l->succ);
	return 0;
}

/* -------------------------------------------------------------- sizes */

typedef struct opts {
	int ranks, iters, warmup;
	const char *mode, *plugin;
	size_t min, max;
} opts;

/* barrier: every rank waits for all (pipes through rank 0). */
static void barrier(int rank, int n)
{
	if (rank == 0) {
		for (int k = 1; k < n; k++)
			h_wait(k);
		for (int k = 1; k < n; k++)
			h_signal(k);
	} else {
		h_signal(0);
		h_wait(0);
	}
}

static double cpu_s(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
	       (double)u.ru_stime.tv_usec / 1e6;
}

static void fill(ring *g)
{
	for (size_t j = 0; j < g->count; j++)
		g->data[j] = (float)((g->rank + 1) * (int)(1 + j % 7));
}

static int check(const ring *g)
{
	float sum = (float)(g->n * (g->n + 1) / 2);
	for (size_t j = 0; j < g->count; j++)
		if (g->data[j] != sum * (float)(1 + j % 7)) {
			fprintf(stderr, "    rank %d: float %zu of %zu is %g, want %g\n", g->rank, j, g->count,
				(double)g->data[j], (double)(sum * (float)(1 + j % 7)));
			return -1;
		}
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int default_iters(size_t bytes) { return bytes <= (64u << 10) ? 100 : bytes <= (1u << 20) ? 30 : bytes <= (16u << 20) ? 10 : 5; }

/* one_size runs the all-reduces of one size; rank 0 prints its line. */
static int one_size(const opts *o, ring *g, const transport *t, libhoma_t *l, size_t bytes)
{
	g->count = bytes / sizeof(float);
	g->per = (g->count + (size_t)g->n - 1) / (size_t)g->n;
	g->slices = g->per > SLOT_FLOATS ? (g->per + SLOT_FLOATS - 1) / SLOT_FLOATS : 1;
	g->total = 2 * (uint64_t)(g->n - 1) * g->slices;
	int iters = o->iters > 0 ? o->iters : default_iters(bytes);
	int64_t times[1000];
	if (iters > 1000)
		iters = 1000;
	double cpu = 0;
	for (int it = -o->warmup; it < iters; it++) {
		fill(g);
		barrier(g->rank, g->n);
		double c0 = cpu_s();
		int64_t t0 = h_now();
		if (allreduce(g, t))
			return -1;
		int64_t dt = h_now() - t0;
		if (it >= 0)
			times[it] = dt, cpu += cpu_s() - c0;
		if (l)
			l->base += g->total;
	}
	if (check(g))
		return -1;
	if (g->rank != 0) {
		h_put_bytes(0, times, (size_t)iters * sizeof times[0]);
		h_put_bytes(0, &cpu, sizeof cpu);
		return 0;
	}
	for (int k = 1; k < g->n; k++) { /* each iteration's time is the slowest rank's */
		int64_t theirs[1000];
		double c;
		h_get_bytes(k, theirs, (size_t)iters * sizeof theirs[0]);
		h_get_bytes(k, &c, sizeof c);
		cpu += c;
		for (int i = 0; i < iters; i++)
			if (theirs[i] > times[i])
				times[i] = theirs[i];
	}
	qsort(times, (size_t)iters, sizeof times[0], cmp_i64);
	double us = iters % 2 ? (double)times[iters / 2] / 1e3 : (double)(times[iters / 2 - 1] + times[iters / 2]) / 2e3;
	double algbw = (double)bytes / us / 1e3; /* GB/s */
	double gb = (double)bytes * iters / 1e9;
	printf("{\"ranks\": %d, \"mode\": \"%s\", \"bytes\": %zu, \"iters\": %d, \"msgs\": %llu, \"time_us\": %.3f, "
	       "\"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, \"cpu_s_per_gb\": %.6f}\n",
	       g->n, o->mode, bytes, iters, (unsigned long long)g->total, us, algbw,
	       algbw * 2.0 * (g->n - 1) / g->n, cpu / gb);
	fflush(stdout);
	return 0;
}

static int rank_main(const opts *o, int r)
{
	int plugin = strcmp(o->mode, "plugin") == 0;
	h_version = 10;
	int rc = h_start_rank(plugin ? o->plugin : NULL, r, NULL);
	if (rc)
		return rc;
	ring g = {.rank = r, .n = o->ranks};
	g.data = malloc(o->max < sizeof(float) ? sizeof(float) : o->max);
	g.slots = malloc((size_t)SLOTS * SLOT_BYTES);
	if (!g.data || !g.slots)
		return 2;
	g.count = o->max / sizeof(float);
	plugin_t p;
	libhoma_t l;
	transport t;
	if (plugin) {
		if (plugin_open(&p, &g))
			return 1;
		t = (transport){p_post, p_send, p_recv_done, p_send_done, &p};
	} else {
		if (libhoma_open(&l, &g))
			return 1;
		t = (transport){l_post, l_send, l_recv_done, l_send_done, &l};
	}
	for (size_t b = o->min; b <= o->max; b *= 2)
		if (one_size(o, &g, &t, plugin ? NULL : &l, b)) {
			fprintf(stderr, "    rank %d: %s all-reduce of %zu bytes failed\n", r, o->mode, b);
			return 1;
		}
	barrier(r, o->ranks); /* no rank leaves while another still waits for it */
	if (plugin)
		plugin_close(&p);
	else
		homa_destroy(l.c);
	return 0;
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	return *end ? 0 : (size_t)v;
}

/* default_plugin is libnccl-net-homa.so beside this executable. */
static void default_plugin(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	char *slash = strrchr(buf, '/');
	size_t at = slash ? (size_t)(slash - buf) + 1 : 0;
	snprintf(buf + at, len - at, "libnccl-net-homa.so");
}

static int usage(void)
{
	fprintf(stderr, "usage: bench-allreduce --ranks N [--mode plugin|libhoma] [--plugin PATH] [--min BYTES] "
			"[--max BYTES] [--iters K] [--warmup W]\n");
	return 2;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	default_plugin(path, sizeof path);
	opts o = {.ranks = 2, .warmup = 2, .mode = "plugin", .plugin = path, .min = 8, .max = 64u << 20};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--ranks"))
			o.ranks = atoi(v);
		else if (!strcmp(a, "--mode"))
			o.mode = v;
		else if (!strcmp(a, "--plugin"))
			o.plugin = v;
		else if (!strcmp(a, "--min"))
			o.min = parse_size(v);
		else if (!strcmp(a, "--max"))
			o.max = parse_size(v);
		else if (!strcmp(a, "--iters"))
			o.iters = atoi(v);
		else if (!strcmp(a, "--warmup"))
			o.warmup = atoi(v);
		else
			return usage();
	}
	if (o.ranks < 2 || o.ranks > 8 || (strcmp(o.mode, "plugin") && strcmp(o.mode, "libhoma")) || o.min < 4 ||
	    o.max < o.min || o.iters < 0 || o.iters > 1000 || o.warmup < 0) {
		fprintf(stderr, "bench-allreduce: --ranks 2..8, --mode plugin or libhoma, 4 <= --min <= --max, "
				"--iters 0..1000 (0: by size), --warmup >= 0\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (h_open_pipes(o.ranks))
		return 2;
	pid_t pids[8];
	for (int r = 0; r < o.ranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			int st = rank_main(&o, r);
			fflush(stderr);
			_exit(st);
		}
	}
	h_close_pipes(o.ranks);
	int failed = 0;
	for (int left = o.ranks; left > 0; left--) {
		int st;
		pid_t p = wait(&st);
		if (p > 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
			if (!failed)
				for (int r = 0; r < o.ranks; r++) /* the others would wait for it */
					if (pids[r] != p)
						kill(pids[r], SIGKILL);
			failed = 1;
		}
	}
	return failed;
}
