/*
 * plugin.c: init, devices, properties, memory registration, and the
 * plugin's objects (listens and comms) and their ids.
 */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

hn_global g = {.mu = PTHREAD_MUTEX_INITIALIZER};

void hn_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (g.log)
		g.log(level, flags, file, line, "NET/homa : %s", buf);
	else if (level == NCCL_LOG_WARN)
		fprintf(stderr, "NET/homa : %s\n", buf);
}

int64_t hn_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

const char *hn_peer_str(const homa_addr *a, char *buf, size_t len)
{
	char ip[64];
	if (!homa_addr_format(a, ip, sizeof ip))
		snprintf(ip, sizeof ip, "?");
	snprintf(buf, len, a->family == 6 ? "[%s]:%u" : "%s:%u", ip, a->port);
	return buf;
}

/* env_int reads a whole number from the environment: def when unset; a
 * value that does not parse, or lies outside lo..hi, is refused (-1 and a
 * warning naming it). */
static int env_int(const char *name, long def, long lo, long hi, long *out)
{
	const char *v = getenv(name);
	if (!v || !*v) {
		*out = def;
		return 0;
	}
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || x < lo || x > hi) {
		HN_WARN("%s=%s: want a whole number from %ld to %ld", name, v, lo, hi);
		return -1;
	}
	*out = x;
	return 0;
}

uint64_t hn_random64(void)
{
	uint64_t k = 0;
	while (k == 0) {
		if (getrandom(&k, sizeof k, 0) != sizeof k)
			k = (uint64_t)hn_now() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	}
	return k;
}

/* ------------------------------------------------------------- objects */

#define IDX_BITS 12
#define IDX_MASK ((1u << IDX_BITS) - 1)

hn_obj *hn_new(int type, hn_dev *d)
{
	for (uint32_t i = 1; i < HN_MAX_OBJS; i++) {
		if (g.objs[i])
			continue;
		hn_obj *o = calloc(1, sizeof *o);
		if (!o)
			return NULL;
		g.gens[i] = (g.gens[i] + 1) & 0x7ffff; /* ids stay below 2^31: a DATA tag's high bit is 0 */
		if (g.gens[i] == 0)
			g.gens[i] = 1;
		o->type = (uint8_t)type;
		o->id = g.gens[i] << IDX_BITS | i;
		o->key = hn_random64();
		o->dev = d;
		o->traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
		g.objs[i] = o;
		if ((int)i > g.hwm)
			g.hwm = (int)i;
		return o;
	}
	return NULL;
}

hn_obj *hn_find(uint32_t id, int type)
{
	uint32_t i = id & IDX_MASK;
	hn_obj *o = i ? g.objs[i] : NULL;
	return o && o->id == id && o->type == type ? o : NULL;
}

void hn_free(hn_obj *o)
{
	g.objs[o->id & IDX_MASK] = NULL;
	free(o);
}

/* hn_fail marks o failed (the first reason stays) and logs it once. */
void hn_fail(hn_obj *o, const char *fmt, ...)
{
	if (o->failed)
		return;
	o->failed = 1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(o->why, sizeof o->why, fmt, ap);
	va_end(ap);
	char p[80];
	HN_WARN("%s comm %#x (peer %s): %s", o->type == HN_SEND ? "send" : "recv", o->id,
		hn_peer_str(&o->peer, p, sizeof p), o->why);
}

/* ---------------------------------------------------------------- init */

int hn_start_progress(hn_dev *d);

/* spin_default is how long the progress thread spins before it sleeps
 * when HOMA_NCCL_SPIN_US is unset: 50 us where the process may use 8 CPUs
 * or more; none on fewer, where a spinning progress thread takes the
 * CPU the ranks and the daemon's loop need (on 2 CPUs, when the thread
 * still read every message, a message cost 175 us more with the spin
 * than the same ring over libhoma). The thread waits in rx only while no
 * caller polls (comm.c, progress). */
static long spin_default(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 8)
		return 50;
	return 0;
}

static int attach_dev(hn_dev *d, const char *path)
{
	char err[256];
	homa_options o;
	homa_options_init(&o);
	long spin_us;
	if (env_int("HOMA_NCCL_SPIN_US", spin_default(), 0, 1000000, &spin_us))
		return -1;
	o.spin_ns = spin_us * 1000;
	snprintf(d->path, sizeof d->path, "%s", path);
	int rc = homa_attach(path, &o, &d->rx, err, sizeof err);
	if (rc) {
		HN_INFO("no daemon at %s (HOMA_NCCL_SOCKET): %s", path, err);
		return -1;
	}
	o.op_timeout_ns = 0; /* the tx client never waits: a full arena or ring is "try again" */
	rc = homa_attach(path, &o, &d->tx, err, sizeof err);
	if (rc) {
		HN_WARN("%s: a second session: %s", path, err);
		return -1;
	}
	homa_host_info hi;
	memset(&hi, 0, sizeof hi);
	hi.size = sizeof hi;
	rc = homa_host_info_get(d->rx, &hi);
	if (rc) {
		HN_WARN("%s: the daemon does not say its host's address (%s): it is older than this plugin", path,
			homa_strerror(rc));
		return -1;
	}
	d->self = hi.ipv4.family == 4 ? hi.ipv4 : hi.ipv6;
	d->link_mbps = hi.link_mbps;
	uint32_t mm = homa_max_message(d->tx);
	d->max_bytes = mm > sizeof(hn_wire) ? mm - sizeof(hn_wire) : 0;

	long want;
	if (env_int("HOMA_NCCL_PORT", 0, 0, HOMA_MAX_SERVER_PORT, &want))
		return -1;
	if (want) {
		rc = homa_bind(d->rx, (uint16_t)want);
		if (rc) {
			HN_WARN("%s: binding port %ld (HOMA_NCCL_PORT): %s", path, want, homa_strerror(rc));
			return -1;
		}
		d->self.port = (uint16_t)want;
	} else {
		/* a port of its own among the host's other processes */
		uint32_t start = (uint32_t)(hn_random64() % 8192);
		for (int i = 0; i < 64; i++) {
			uint16_t p = (uint16_t)(0x6000 + (start + (uint32_t)i * 131) % 8192);
			rc = homa_bind(d->rx, p);
			if (rc == 0) {
				d->self.port = p;
				break;
			}
			if (rc != HOMA_ERR_PORT_IN_USE)
				break;
		}
		if (rc) {
			HN_WARN("%s: no free port to bind: %s", path, homa_strerror(rc));
			return -1;
		}
	}
	snprintf(d->name, sizeof d->name, "homa%d", d->index);
	if (hn_start_progress(d))
		return -1;
	char a[80];
	HN_INFO("device %d: %s, host %s, %u Mbit/s, messages up to %zu bytes", d->index, path,
		hn_peer_str(&d->self, a, sizeof a), d->link_mbps, d->max_bytes);
	return 0;
}

ncclResult_t hn_init(ncclDebugLogger_t log)
{
	pthread_mutex_lock(&g.mu);
	if (log)
		g.log = log;
	if (g.inited) {
		pthread_mutex_unlock(&g.mu);
		return g.ndev > 0 ? ncclSuccess : ncclSystemError;
	}
	g.inited = 1;
	long early, warn_s, probe_ms;
	if (env_int("HOMA_NCCL_EARLY", 32, 1, HN_WIN - HN_MAX_REQS, &early) ||
	    env_int("HOMA_NCCL_WARN_S", 10, 1, 86400, &warn_s) ||
	    env_int("HOMA_NCCL_PROBE_MS", 500, 10, 600000, &probe_ms)) {
		pthread_mutex_unlock(&g.mu);
		return ncclInvalidUsage;
	}
	g.early = (int)early;
	g.warn_ns = warn_s * 1000000000ll;
	g.probe_ns = probe_ms * 1000000ll;

	const char *env = getenv("HOMA_NCCL_SOCKET");
	char paths[1024];
	snprintf(paths, sizeof paths, "%s", env && *env ? env : "/run/homa-dpdk/workers.sock");
	char *save = NULL;
	for (char *p = strtok_r(paths, ",", &save); p && g.ndev < HN_MAX_DEVS; p = strtok_r(NULL, ",", &save)) {
		hn_dev *d = &g.dev[g.ndev];
		d->index = g.ndev;
		if (attach_dev(d, p) == 0)
			g.ndev++;
		else
			memset(d, 0, sizeof *d); /* a half-made device is not offered (its sessions end with the process) */
	}
	pthread_mutex_unlock(&g.mu);
	if (g.ndev == 0) {
		HN_INFO("no homa-dpdk daemon to use (HOMA_NCCL_SOCKET=%s): NCCL goes on without this net",
			env && *env ? env : "unset, /run/homa-dpdk/workers.sock");
		return ncclSystemError;
	}
	return ncclSuccess;
}

ncclResult_t hn_devices(int *ndev)
{
	*ndev = g.ndev;
	return ncclSuccess;
}

ncclResult_t hn_get_properties(int dev, hn_props *p)
{
	if (dev < 0 || dev >= g.ndev)
		return ncclInvalidArgument;
	hn_dev *d = &g.dev[dev];
	p->name = d->name;
	p->speed_mbps = d->link_mbps ? (int)d->link_mbps : 10000;
	p->port = 1;
	p->latency_us = 0; /* not measured: NCCL's own default */
	p->max_comms = HN_MAX_OBJS - 1;
	p->max_recvs = 1;
	p->max_bytes = d->max_bytes;
	return ncclSuccess;
}

/* ---------------------------------------------------- memory regions */

typedef struct hn_mr {
	void *data;
	size_t size;
} hn_mr;

ncclResult_t hn_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	(void)comm;
	if (type != NCCL_PTR_HOST) {
		HN_WARN("regMr of %zu bytes at %p of type %d: this plugin takes host memory only (NCCL_PTR_HOST)", size,
			data, type);
		return ncclInternalError;
	}
	hn_mr *m = malloc(sizeof *m);
	if (!m)
		return ncclSystemError;
	m->data = data;
	m->size = size;
	*mhandle = m;
	return ncclSuccess;
}

ncclResult_t hn_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			      void **mhandle)
{
	(void)comm, (void)offset, (void)fd, (void)mhandle;
	HN_WARN("regMrDmaBuf of %zu bytes at %p of type %d: this plugin takes host memory only (NCCL_PTR_HOST)",
		size, data, type);
	return ncclInternalError;
}

ncclResult_t hn_dereg_mr(void *comm, void *mhandle)
{
	(void)comm;
	free(mhandle);
	return ncclSuccess;
}

ncclResult_t hn_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles, void **request)
{
	(void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
	*request = NULL;
	HN_WARN("iflush: receives are into host memory (ptrSupport NCCL_PTR_HOST): nothing is ever to flush");
	return ncclInternalError;
}
