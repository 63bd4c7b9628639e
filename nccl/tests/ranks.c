/*
 * ranks.c: what the harness and the benchmark share: the plugin loaded
 * with dlopen and one of its tables called through version-neutral
 * wrappers, and the pipes between forked ranks that carry handles and
 * signals.
 */
#include "ranks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int h_version;
int h_rank;
static const ncclNet_v8_t *t8;
static const ncclNet_v9_t *t9;
static const ncclNet_v10_t *t10;
static int pipes[8][8][2]; /* pipes[from][to] */

int64_t h_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The last 64 WARN and INFO lines, for h_warned and h_informed (the
 * progress thread logs too). */
static char warns[64][600], infos[64][600];
static int nwarns, ninfos;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static int count_lines(char lines[][600], int n, const char *needle)
{
	int k = 0;
	pthread_mutex_lock(&log_mu);
	for (int i = 0; i < n && i < 64; i++)
		k += strstr(lines[i], needle) != NULL;
	pthread_mutex_unlock(&log_mu);
	return k;
}

int h_warned(const char *needle) { return count_lines(warns, nwarns, needle); }
int h_informed(const char *needle) { return count_lines(infos, ninfos, needle); }

/* The plugin's logger: WARN lines printed, INFO lines with HARNESS_INFO
 * set; both kept. */
static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	(void)flags;
	char buf[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_mu);
	if (level == NCCL_LOG_WARN)
		snprintf(warns[nwarns++ % 64], sizeof warns[0], "%s", buf);
	else
		snprintf(infos[ninfos++ % 64], sizeof infos[0], "%s", buf);
	pthread_mutex_unlock(&log_mu);
	if (level != NCCL_LOG_WARN && !getenv("HARNESS_INFO"))
		return;
	fprintf(stderr, "    rank %d %s %s:%d %s\n", h_rank, level == NCCL_LOG_WARN ? "WARN" : "INFO", file, line, buf);
}

/* ------------------------------------------------------------ wrappers */

#define PICK(f8, f9, f10) (h_version == 8 ? (f8) : h_version == 9 ? (f9) : (f10))

ncclResult_t h_init(void) { return h_version == 10 ? t10->init(logger, NULL) : h_version == 9 ? t9->init(logger) : t8->init(logger); }
ncclResult_t h_devices(int *n) { return PICK(t8->devices(n), t9->devices(n), t10->devices(n)); }

ncclResult_t h_props(int dev, ncclNetProperties_v9_t *p)
{
	memset(p, 0, sizeof *p);
	if (h_version == 8) {
		ncclNetProperties_v8_t q;
		ncclResult_t rc = t8->getProperties(dev, &q);
		p->name = q.name, p->pciPath = q.pciPath, p->guid = q.guid, p->ptrSupport = q.ptrSupport;
		p->regIsGlobal = q.regIsGlobal, p->speed = q.speed, p->port = q.port, p->latency = q.latency;
		p->maxComms = q.maxComms, p->maxRecvs = q.maxRecvs, p->netDeviceType = q.netDeviceType;
		return rc;
	}
	return h_version == 9 ? t9->getProperties(dev, p) : t10->getProperties(dev, p);
}

ncclResult_t h_listen(void *handle, void **l) { return PICK(t8->listen(0, handle, l), t9->listen(0, handle, l), t10->listen(0, handle, l)); }

ncclResult_t h_connect(void *handle, int tc, void **s)
{
	ncclNetCommConfig_v10_t cfg = {tc};
	ncclNetDeviceHandle_v8_t *dh = NULL;
	return PICK(t8->connect(0, handle, s, &dh), t9->connect(0, handle, s, &dh), t10->connect(0, &cfg, handle, s, &dh));
}

ncclResult_t h_accept(void *l, void **r)
{
	ncclNetDeviceHandle_v8_t *dh = NULL;
	return PICK(t8->accept(l, r, &dh), t9->accept(l, r, &dh), t10->accept(l, r, &dh));
}

ncclResult_t h_regmr(void *c, void *d, size_t n, int type, void **mh)
{
	return PICK(t8->regMr(c, d, n, type, mh), t9->regMr(c, d, n, type, mh), t10->regMr(c, d, n, type, mh));
}

ncclResult_t h_deregmr(void *c, void *mh) { return PICK(t8->deregMr(c, mh), t9->deregMr(c, mh), t10->deregMr(c, mh)); }

ncclResult_t h_isend(void *s, void *d, size_t n, void *mh, void **req)
{
	return PICK(t8->isend(s, d, (int)n, 0, mh, req), t9->isend(s, d, n, 0, mh, req), t10->isend(s, d, n, 0, mh, NULL, req));
}

ncclResult_t h_irecv(void *r, void *d, size_t n, void *mh, void **req)
{
	int tag = 0, isz = (int)n;
	void *ph = NULL;
	*req = NULL;
	return PICK(t8->irecv(r, 1, &d, &isz, &tag, &mh, req), t9->irecv(r, 1, &d, &n, &tag, &mh, req),
		    t10->irecv(r, 1, &d, &n, &tag, &mh, &ph, req));
}

ncclResult_t h_test(void *req, int *done, int *size) { return PICK(t8->test(req, done, size), t9->test(req, done, size), t10->test(req, done, size)); }
ncclResult_t h_close_send(void *c) { return PICK(t8->closeSend(c), t9->closeSend(c), t10->closeSend(c)); }
ncclResult_t h_close_recv(void *c) { return PICK(t8->closeRecv(c), t9->closeRecv(c), t10->closeRecv(c)); }
ncclResult_t h_close_listen(void *c) { return PICK(t8->closeListen(c), t9->closeListen(c), t10->closeListen(c)); }

/* -------------------------------------------------------------- ranks */

void h_full_write(int fd, const void *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			perror("ranks: write");
			exit(2);
		}
		b = (const char *)b + w, n -= (size_t)w;
	}
}

void h_full_read(int fd, void *b, size_t n)
{
	while (n) {
		ssize_t r = read(fd, b, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "    rank %d: the other rank is gone\n", h_rank);
			exit(2);
		}
		b = (char *)b + r, n -= (size_t)r;
	}
}

void h_put_handle(int to, const void *handle) { h_full_write(pipes[h_rank][to][1], handle, NCCL_NET_HANDLE_MAXSIZE); }
void h_get_handle(int from, void *handle) { h_full_read(pipes[from][h_rank][0], handle, NCCL_NET_HANDLE_MAXSIZE); }
void h_signal(int to) { h_full_write(pipes[h_rank][to][1], "s", 1); }
void h_wait(int from)
{
	char c;
	h_full_read(pipes[from][h_rank][0], &c, 1);
}

int h_connect_pair(int to, int from, void **send, void **recv, void **listen)
{
	return h_connect_pair_tc(to, from, -1, send, recv, listen);
}

int h_connect_pair_tc(int to, int from, int traffic_class, void **send, void **recv, void **listen)
{
	char mine[NCCL_NET_HANDLE_MAXSIZE], theirs[NCCL_NET_HANDLE_MAXSIZE];
	CHECK(h_listen(mine, listen), "listen");
	if (!*listen)
		FAILF("listen gave no comm");
	h_put_handle(from, mine);
	h_get_handle(to, theirs);
	*send = *recv = NULL;
	int64_t t0 = h_now();
	while (!*send || !*recv) {
		if (!*send)
			CHECK(h_connect(theirs, traffic_class, send), "connect");
		if (!*recv)
			CHECK(h_accept(*listen, recv), "accept");
		if (h_now() - t0 > 30000000000ll)
			FAILF("no connection after 30 s");
	}
	return 0;
}

int h_wait_req(void *req, int *size, int64_t limit_ns)
{
	int64_t t0 = h_now();
	for (;;) {
		int done = 0;
		ncclResult_t rc = h_test(req, &done, size);
		if (rc != ncclSuccess)
			return (int)rc;
		if (done)
			return 0;
		if (h_now() - t0 > limit_ns)
			return -1;
		sched_yield(); /* as NCCL's proxy thread does when it made no progress */
	}
}

int h_send_wait(void *send, void *data, size_t size)
{
	void *req = NULL;
	while (!req)
		CHECK(h_isend(send, data, size, NULL, &req), "isend");
	int got = -1;
	int rc = h_wait_req(req, &got, 60000000000ll);
	if (rc)
		FAILF("send of %zu bytes: test %d", size, rc);
	if ((size_t)got != size)
		FAILF("send of %zu bytes: test says %d", size, got);
	return 0;
}

int h_recv_wait(void *recv, void *data, size_t room, size_t *got)
{
	void *req = NULL;
	while (!req)
		CHECK(h_irecv(recv, data, room, NULL, &req), "irecv");
	int n = -1;
	int rc = h_wait_req(req, &n, 60000000000ll);
	if (rc)
		FAILF("receive of up to %zu bytes: test %d", room, rc);
	*got = (size_t)n;
	return 0;
}

static int load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "ranks: %s\n", dlerror());
		return -1;
	}
	t8 = dlsym(h, "ncclNetPlugin_v8");
	t9 = dlsym(h, "ncclNetPlugin_v9");
	t10 = dlsym(h, "ncclNetPlugin_v10");
	if (h_version == 8 ? !t8 : h_version == 9 ? !t9 : !t10) {
		fprintf(stderr, "ranks: %s exports no ncclNetPlugin_v%d\n", path, h_version);
		return -1;
	}
	return 0;
}

/* own_socket sets HOMA_NCCL_SOCKET to rank r's of HARNESS_SOCKETS. */
static int own_socket(int r)
{
	const char *all = getenv("HARNESS_SOCKETS");
	if (!all || !*all)
		return 0;
	char buf[2048];
	snprintf(buf, sizeof buf, "%s", all);
	int n = 0;
	for (char *p = buf; p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		n++;
	char *save = NULL, *s = strtok_r(buf, ",", &save);
	for (int i = 0; i < r % n && s; i++)
		s = strtok_r(NULL, ",", &save);
	if (!s) {
		fprintf(stderr, "ranks: HARNESS_SOCKETS=%s: empty entry\n", all);
		return -1;
	}
	return setenv("HOMA_NCCL_SOCKET", s, 1);
}


int h_open_pipes(int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (pipe(pipes[i][j])) {
				perror("pipe");
				return -1;
			}
	return 0;
}

void h_close_pipes(int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			close(pipes[i][j][0]), close(pipes[i][j][1]);
}

void h_put_bytes(int to, const void *b, size_t n) { h_full_write(pipes[h_rank][to][1], b, n); }
void h_get_bytes(int from, void *b, size_t n) { h_full_read(pipes[from][h_rank][0], b, n); }

int h_start_rank(const char *plugin, int r, const char *env)
{
	h_rank = r;
	if (own_socket(r))
		return 2;
	if (env)
		putenv((char *)env);
	if (!plugin)
		return 0;
	if (load(plugin))
		return 2;
	ncclResult_t rc = h_init();
	if (rc != ncclSuccess) {
		fprintf(stderr, "    rank %d: init: ncclResult %d\n", r, (int)rc);
		return 1;
	}
	return 0;
}
