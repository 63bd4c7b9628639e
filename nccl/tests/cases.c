/*
 * cases.c: the contract points of the plugin, one case each (see
 * ../README.md, "Conformance"). Every byte received is checked.
 */
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "homa.h"

/* close_pair closes a rank's send comm, receive comm and listen comm. */
static int close_pair(void *s, void *r, void *l)
{
	CHECK(h_close_send(s), "closeSend");
	CHECK(h_close_recv(r), "closeRecv");
	CHECK(h_close_listen(l), "closeListen");
	return 0;
}

/* What getProperties says: a host-memory device, one receive per irecv,
 * a speed, and (v9, v10) the largest message; CUDA memory is refused. */
static int c_props(int rank, int n)
{
	(void)rank, (void)n;
	int nd = 0;
	CHECK(h_devices(&nd), "devices");
	if (nd < 1)
		FAILF("%d devices", nd);
	ncclNetProperties_v9_t p;
	CHECK(h_props(0, &p), "getProperties");
	if (!p.name || strncmp(p.name, "homa", 4) != 0)
		FAILF("name %s", p.name ? p.name : "(null)");
	if (p.ptrSupport != NCCL_PTR_HOST || p.maxRecvs != 1 || p.speed <= 0 || p.maxComms < 64)
		FAILF("ptrSupport %d maxRecvs %d speed %d maxComms %d", p.ptrSupport, p.maxRecvs, p.speed, p.maxComms);
	if (h_version >= 9 && (p.maxP2pBytes < (16u << 20) || p.maxCollBytes != p.maxP2pBytes))
		FAILF("maxP2pBytes %zu maxCollBytes %zu", p.maxP2pBytes, p.maxCollBytes);
	if (h_props(nd, &p) == ncclSuccess)
		FAILF("getProperties of device %d (of %d) succeeded", nd, nd);
	void *mh = NULL;
	char buf[64];
	if (h_regmr(NULL, buf, sizeof buf, NCCL_PTR_CUDA, &mh) == ncclSuccess)
		FAILF("regMr took CUDA memory");
	CHECK(h_regmr(NULL, buf, sizeof buf, NCCL_PTR_HOST, &mh), "regMr host");
	CHECK(h_deregmr(NULL, mh), "deregMr");
	return 0;
}

/* connect before the other side accepts, and accept before the other
 * side connects: neither blocks (each first call yields no comm). */
static int c_orders(int rank, int n)
{
	(void)n;
	char h[NCCL_NET_HANDLE_MAXSIZE];
	for (int order = 0; order < 2; order++) {
		if (rank == 0) { /* the receiver */
			void *l = NULL, *r = NULL;
			CHECK(h_listen(h, &l), "listen");
			h_put_handle(1, h);
			if (order == 1) {
				CHECK(h_accept(l, &r), "accept");
				if (r)
					FAILF("accept yielded a comm before anyone connected");
				h_signal(1);
			} else {
				h_wait(1); /* the sender has its comm */
			}
			while (!r)
				CHECK(h_accept(l, &r), "accept");
			uint8_t b[100];
			size_t got;
			if (h_recv_wait(r, b, sizeof b, &got) || got != 10 || h_check(b, got, 7 + order, "message"))
				FAILF("order %d: message", order);
			CHECK(h_close_recv(r), "closeRecv");
			CHECK(h_close_listen(l), "closeListen");
		} else {
			void *s = NULL;
			h_get_handle(0, h);
			if (order == 1)
				h_wait(0);
			while (!s)
				CHECK(h_connect(h, -1, &s), "connect");
			if (order == 0)
				h_signal(0);
			uint8_t b[10];
			h_fill(b, sizeof b, 7 + order);
			if (h_send_wait(s, b, sizeof b))
				return 1;
			CHECK(h_close_send(s), "closeSend");
		}
	}
	return 0;
}

/* 0 B to 16 MiB, each into a receive larger than the send: test gives
 * the true size, the bytes arrive whole. */
static int c_sizes(int rank, int n)
{
	static const size_t sizes[] = {0, 1, 100, 1400, 4096, 65536, 65537, 524288, 4 << 20, 16 << 20};
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	(void)n;
	uint8_t *buf = malloc((16 << 20) + 4096);
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t sz = sizes[i], got = 0;
		if (rank == 0) {
			h_fill(buf, sz, i);
			if (h_send_wait(s, buf, sz))
				return 1;
		} else {
			memset(buf, 0xAA, sz + 4096);
			if (h_recv_wait(r, buf, sz + 4096, &got))
				return 1;
			if (got != sz)
				FAILF("sent %zu bytes, test says %zu received", sz, got);
			if (h_check(buf, sz, i, "message"))
				return 1;
			for (size_t k = sz; k < sz + 4096; k++)
				if (buf[k] != 0xAA)
					FAILF("a %zu-byte message wrote byte %zu of its receive", sz, k);
		}
	}
	free(buf);
	if (close_pair(s, r, l))
		return 1;
	/* the comms' counters, logged at close (NCCL_DEBUG=INFO) */
	size_t total = 0;
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		total += sizes[i];
	char counts[120];
	snprintf(counts, sizeof counts, ": 10 requests, %zu bytes, 0 in flight", total);
	if (!h_informed(counts))
		FAILF("no INFO line at close with \"%s\"", counts);
	return 0;
}

/* NCCL's pipeline: 8 slots of 512 KiB per connection kept full, both
 * ways at once; messages match in posting order. */
static int c_pipeline(int rank, int n)
{
	(void)n;
	enum { SLOTS = 8, SZ = 512 << 10, MSGS = 160 };
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	uint8_t *sb = malloc(SLOTS * (size_t)SZ), *rb = malloc(SLOTS * (size_t)SZ);
	void *sreq[SLOTS] = {0}, *rreq[SLOTS] = {0};
	int sent = 0, rcvd = 0, sposted = 0, rposted = 0;
	while (sent < MSGS || rcvd < MSGS) {
		int k = sposted % SLOTS;
		if (sposted < MSGS && !sreq[k]) {
			size_t sz = SZ - (size_t)(sposted % 7) * 1000;
			h_fill(sb + (size_t)k * SZ, sz, (uint64_t)rank << 32 | (uint32_t)sposted);
			CHECK(h_isend(s, sb + (size_t)k * SZ, sz, NULL, &sreq[k]), "isend");
			if (sreq[k])
				sposted++;
		}
		k = rposted % SLOTS;
		if (rposted < MSGS && !rreq[k]) {
			CHECK(h_irecv(r, rb + (size_t)k * SZ, SZ, NULL, &rreq[k]), "irecv");
			if (rreq[k])
				rposted++;
		}
		int done, got;
		k = sent % SLOTS;
		if (sent < sposted) {
			CHECK(h_test(sreq[k], &done, &got), "test send");
			if (done)
				sreq[k] = NULL, sent++;
		}
		k = rcvd % SLOTS;
		if (rcvd < rposted) {
			CHECK(h_test(rreq[k], &done, &got), "test recv");
			if (done) {
				size_t want = SZ - (size_t)(rcvd % 7) * 1000;
				if ((size_t)got != want)
					FAILF("message %d: %d bytes, want %zu", rcvd, got, want);
				if (h_check(rb + (size_t)k * SZ, want, (uint64_t)(rank ^ 1) << 32 | (uint32_t)rcvd, "message"))
					return 1;
				rreq[k] = NULL, rcvd++;
			}
		}
	}
	free(sb), free(rb);
	return close_pair(s, r, l);
}

/* 128 receives posted, then 128 sends: all in flight at once (none
 * refused), then every one completes, in order. */
static int c_inflight(int rank, int n)
{
	(void)n;
	enum { N = 128, SZ = 3000 };
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	uint8_t *b = malloc((size_t)N * SZ);
	void *req[N];
	if (rank == 1) {
		for (int i = 0; i < N; i++) {
			CHECK(h_irecv(r, b + (size_t)i * SZ, SZ, NULL, &req[i]), "irecv");
			if (!req[i])
				FAILF("irecv %d of %d refused (NULL request)", i, N);
		}
		h_signal(0);
	} else {
		h_wait(1);
		for (int i = 0; i < N; i++) {
			h_fill(b + (size_t)i * SZ, SZ - (size_t)i, (uint64_t)i);
			req[i] = NULL;
			int64_t t0 = h_now();
			while (!req[i]) { /* the credit for it may still be on its way */
				CHECK(h_isend(s, b + (size_t)i * SZ, SZ - (size_t)i, NULL, &req[i]), "isend");
				if (h_now() - t0 > 30000000000ll)
					FAILF("isend %d of %d: no request for 30 s", i, N);
			}
		}
	}
	for (int i = 0; i < N; i++) {
		int got;
		int rc = h_wait_req(req[i], &got, 60000000000ll);
		if (rc)
			FAILF("request %d: test %d", i, rc);
		if (got != SZ - i)
			FAILF("request %d: %d bytes, want %d", i, got, SZ - i);
		if (rank == 1 && h_check(b + (size_t)i * SZ, (size_t)(SZ - i), (uint64_t)i, "message"))
			return 1;
	}
	free(b);
	return close_pair(s, r, l);
}

/* A sender with no receive posted: past its credit it gets NULL
 * requests ("try again"), never an error, and goes on once receives are
 * posted. */
static int c_backpressure(int rank, int n)
{
	(void)n;
	enum { N = 200, SZ = 1000 };
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	uint8_t b[SZ];
	if (rank == 0) {
		int posted = 0, nulls = 0;
		void *req[N];
		h_fill(b, SZ, 1);
		int64_t t0 = h_now();
		while (posted < N && h_now() - t0 < 2000000000ll) {
			void *q = NULL;
			CHECK(h_isend(s, b, SZ, NULL, &q), "isend");
			if (q)
				req[posted++] = q;
			else
				nulls++;
		}
		if (posted >= N || nulls == 0)
			FAILF("%d sends taken and %d refused with no receive posted: want a bound", posted, nulls);
		printf("    %d sends taken before the receiver posted any\n", posted);
		h_signal(1);
		for (int i = 0; i < posted; i++)
			if (h_wait_req(req[i], NULL, 60000000000ll))
				FAILF("send %d", i);
		for (int i = posted; i < N; i++)
			if (h_send_wait(s, b, SZ))
				return 1;
	} else {
		h_wait(0);
		for (int i = 0; i < N; i++) {
			size_t got;
			if (h_recv_wait(r, b, SZ, &got) || got != SZ || h_check(b, SZ, 1, "message"))
				FAILF("message %d", i);
		}
	}
	return close_pair(s, r, l);
}

/* A ring over 4 ranks: each sends to its successor and receives from its
 * predecessor, 50 steps of 256 KiB. */
static int c_ring(int rank, int n)
{
	enum { STEPS = 50, SZ = 256 << 10 };
	void *s, *r, *l;
	if (h_connect_pair((rank + 1) % n, (rank + n - 1) % n, &s, &r, &l))
		return 1;
	uint8_t *sb = malloc(SZ), *rb = malloc(SZ);
	for (int st = 0; st < STEPS; st++) {
		void *sq = NULL, *rq = NULL;
		h_fill(sb, SZ, (uint64_t)rank * 1000 + (uint64_t)st);
		while (!rq)
			CHECK(h_irecv(r, rb, SZ, NULL, &rq), "irecv");
		while (!sq)
			CHECK(h_isend(s, sb, SZ, NULL, &sq), "isend");
		int got;
		if (h_wait_req(sq, &got, 60000000000ll) || h_wait_req(rq, &got, 60000000000ll))
			FAILF("step %d", st);
		if (got != SZ || h_check(rb, SZ, (uint64_t)((rank + n - 1) % n) * 1000 + (uint64_t)st, "step"))
			return 1;
	}
	free(sb), free(rb);
	return close_pair(s, r, l);
}

/* One listen comm accepts the connections of three senders. */
static int c_listen_reuse(int rank, int n)
{
	char h[NCCL_NET_HANDLE_MAXSIZE];
	if (rank == 0) {
		void *l, *r[8] = {0};
		CHECK(h_listen(h, &l), "listen");
		for (int i = 1; i < n; i++)
			h_put_handle(i, h);
		for (int i = 1; i < n; i++)
			while (!r[i])
				CHECK(h_accept(l, &r[i]), "accept");
		uint64_t seen = 0;
		for (int i = 1; i < n; i++) {
			uint8_t b[64];
			size_t got;
			if (h_recv_wait(r[i], b, sizeof b, &got) || got != 8)
				FAILF("comm %d", i);
			seen |= 1ull << b[0];
			if (h_check(b + 1, 7, b[0], "message"))
				return 1;
			CHECK(h_close_recv(r[i]), "closeRecv");
		}
		if (seen != ((1ull << n) - 2))
			FAILF("heard from ranks %#llx", (unsigned long long)seen);
		CHECK(h_close_listen(l), "closeListen");
	} else {
		void *s = NULL;
		h_get_handle(0, h);
		while (!s)
			CHECK(h_connect(h, -1, &s), "connect");
		uint8_t b[8];
		b[0] = (uint8_t)rank;
		h_fill(b + 1, 7, (uint64_t)rank);
		if (h_send_wait(s, b, 8))
			return 1;
		CHECK(h_close_send(s), "closeSend");
	}
	return 0;
}

/* Close with requests in flight both ways: every call returns, and the
 * plugin goes on with new comms. */
static int c_close_inflight(int rank, int n)
{
	(void)n;
	enum { N = 16, SZ = 100000 };
	for (int round = 0; round < 3; round++) {
		void *s, *r, *l;
		if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
			return 1;
		uint8_t *b = malloc((size_t)N * SZ);
		for (int i = 0; i < N; i++) { /* the peer may close first: its errors are no failure */
			void *q = NULL;
			(void)h_isend(s, b + (size_t)i * SZ, SZ, NULL, &q);
			(void)h_irecv(r, b + (size_t)i * SZ, SZ, NULL, &q);
		}
		CHECK(h_close_send(s), "closeSend");
		CHECK(h_close_recv(r), "closeRecv");
		CHECK(h_close_listen(l), "closeListen");
		free(b);
		h_signal(rank ^ 1); /* both closed before the next round */
		h_wait(rank ^ 1);
	}
	/* and a fresh pair still works */
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	uint8_t b[32];
	h_fill(b, sizeof b, 9);
	size_t got;
	if (rank == 0 ? h_send_wait(s, b, sizeof b) : (h_recv_wait(r, b, sizeof b, &got) || h_check(b, got, 9, "message")))
		return 1;
	return close_pair(s, r, l);
}

/* A sender killed mid-transfer: the receiver's test returns an error
 * (its probe finds the sender's port gone), not a hang. */
static int c_peer_killed(int rank, int n)
{
	(void)n;
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	uint8_t b[4096];
	if (rank == 0) {
		h_fill(b, sizeof b, 3);
		if (h_send_wait(s, b, sizeof b))
			return 1;
		h_signal(1);
		pause(); /* killed here */
		return 1;
	}
	size_t got;
	if (h_recv_wait(r, b, sizeof b, &got))
		return 1;
	h_wait(0);
	void *q = NULL;
	while (!q)
		CHECK(h_irecv(r, b, sizeof b, NULL, &q), "irecv");
	int64_t t0 = h_now();
	kill(h_peer_pid(0), SIGKILL);
	int rc = h_wait_req(q, NULL, 30000000000ll);
	if (rc == 0)
		FAILF("a receive from a killed sender completed");
	if (rc < 0)
		FAILF("no error 30 s after the sender was killed");
	printf("    the receive failed %.2f s after the sender was killed\n", (double)(h_now() - t0) / 1e9);
	return close_pair(s, r, l);
}

/* HARNESS_MANY messages each way (250,000 by default: with their
 * receives, 10^6 requests) through one pair of comms, 16 in flight each
 * way, each 64 bytes checked; under the sanitizers (make asan), no leak
 * at the end. */
static int c_many(int rank, int n)
{
	(void)n;
	enum { W = 16, SZ = 64 };
	const char *e = getenv("HARNESS_MANY");
	long total = e ? atol(e) : 250000;
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	uint8_t sb[W][SZ], rb[W][SZ];
	void *sreq[W] = {0}, *rreq[W] = {0};
	long sposted = 0, rposted = 0, sent = 0, rcvd = 0;
	while (sent < total || rcvd < total) {
		int k = (int)(sposted % W);
		if (sposted < total && !sreq[k]) {
			memset(sb[k], (int)(sposted & 0xff), SZ);
			CHECK(h_isend(s, sb[k], SZ, NULL, &sreq[k]), "isend");
			if (sreq[k])
				sposted++;
		}
		k = (int)(rposted % W);
		if (rposted < total && !rreq[k]) {
			CHECK(h_irecv(r, rb[k], SZ, NULL, &rreq[k]), "irecv");
			if (rreq[k])
				rposted++;
		}
		int done, got;
		k = (int)(sent % W);
		if (sent < sposted) {
			CHECK(h_test(sreq[k], &done, &got), "test send");
			if (done)
				sreq[k] = NULL, sent++;
		}
		k = (int)(rcvd % W);
		if (rcvd < rposted) {
			CHECK(h_test(rreq[k], &done, &got), "test recv");
			if (done) {
				if (got != SZ || rb[k][0] != (uint8_t)rcvd || rb[k][SZ - 1] != (uint8_t)rcvd)
					FAILF("request %ld: %d bytes, first %u", rcvd, got, rb[k][0]);
				rreq[k] = NULL, rcvd++;
			}
		}
	}
	CHECK(h_close_send(s), "closeSend");
	CHECK(h_close_recv(r), "closeRecv");
	CHECK(h_close_listen(l), "closeListen");
	if (rank == 0)
		printf("    %ld messages each way, %ld requests in all\n", total, 4 * total);
	return 0;
}

/* Once warm, messages allocate nothing: 2,000 exchanges of 100 B and of
 * 100 KB each way after 2,000 to warm up make no malloc, calloc or
 * realloc in the process (the plugin, libhoma, both threads). */
static int c_no_alloc(int rank, int n)
{
	(void)n;
	enum { W = 8, WARM = 2000, COUNT = 2000 };
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	static uint8_t sb[W][100000], rb[W][100000];
	for (int phase = 0; phase < 2; phase++) {
		size_t sz = phase ? 100000 : 100;
		h_signal(rank ^ 1); /* both warm, then both count */
		h_wait(rank ^ 1);
		h_count_allocs(0);
		void *sreq[W] = {0}, *rreq[W] = {0};
		long sposted = 0, rposted = 0, sent = 0, rcvd = 0;
		int warm = 0; /* WARM done both ways: counting */
		while (sent < WARM + COUNT || rcvd < WARM + COUNT) {
			if (!warm && sent == WARM && rcvd == WARM) {
				warm = 1;
				h_count_allocs(1);
			}
			int k = (int)(sposted % W);
			if (sposted < WARM + COUNT && !sreq[k] && (sposted < WARM || warm)) {
				CHECK(h_isend(s, sb[k], sz, NULL, &sreq[k]), "isend");
				if (sreq[k])
					sposted++;
			}
			k = (int)(rposted % W);
			if (rposted < WARM + COUNT && !rreq[k] && (rposted < WARM || warm)) {
				CHECK(h_irecv(r, rb[k], sizeof rb[k], NULL, &rreq[k]), "irecv");
				if (rreq[k])
					rposted++;
			}
			int done, got;
			k = (int)(sent % W);
			if (sent < sposted) {
				CHECK(h_test(sreq[k], &done, &got), "test send");
				if (done)
					sreq[k] = NULL, sent++;
			}
			k = (int)(rcvd % W);
			if (rcvd < rposted) {
				CHECK(h_test(rreq[k], &done, &got), "test recv");
				if (done)
					rreq[k] = NULL, rcvd++;
			}
		}
		long a = h_allocs();
		h_count_allocs(0);
		if (a > 0)
			FAILF("%ld allocations in %d exchanges of %zu bytes once warm", a, COUNT, sz);
		if (rank == 0)
			printf("    %s allocations in %d exchanges of %zu bytes each way once warm\n",
			       a < 0 ? "(not counted under ASan)" : "0", COUNT, sz);
	}
	return close_pair(s, r, l);
}

/* A request older than HOMA_NCCL_WARN_S (1 here) is logged once, with
 * its comm, peer and message number, and still completes. */
static int c_old_request(int rank, int n)
{
	(void)n;
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	uint8_t b[100];
	if (rank == 1) {
		void *q = NULL;
		while (!q)
			CHECK(h_irecv(r, b, sizeof b, NULL, &q), "irecv");
		int64_t t0 = h_now();
		int done = 0, got;
		while (h_now() - t0 < 2500000000ll) {
			CHECK(h_test(q, &done, &got), "test");
			if (done)
				FAILF("a receive completed with nothing sent");
			usleep(1000);
		}
		if (h_warned("message 0 (100 bytes) not done after") != 1)
			FAILF("%d warnings of the old receive, want 1", h_warned("not done after"));
		h_signal(0);
		if (h_wait_req(q, &got, 60000000000ll) || got != 10 || h_check(b, 10, 4, "message"))
			FAILF("the old receive");
	} else {
		h_wait(1);
		h_fill(b, 10, 4);
		if (h_send_wait(s, b, 10))
			return 1;
	}
	return close_pair(s, r, l);
}

/* The daemon killed (HARNESS_DAEMON_PID, which run.sh gives this case a
 * daemon of its own for): every rank's pending receive and send fails,
 * and so does the next isend, instead of hanging. */
static int c_daemon_gone(int rank, int n)
{
	(void)n;
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	static uint8_t b[4096];
	void *rq = NULL, *sq = NULL;
	while (!rq)
		CHECK(h_irecv(r, b, sizeof b, NULL, &rq), "irecv");
	h_signal(rank ^ 1);
	h_wait(rank ^ 1);
	int64_t t0 = h_now();
	if (rank == 0) {
		const char *pid = getenv("HARNESS_DAEMON_PID");
		if (!pid || kill(atoi(pid), SIGKILL))
			FAILF("no daemon to kill (HARNESS_DAEMON_PID)");
	}
	int rc = h_wait_req(rq, NULL, 30000000000ll);
	if (rc == 0)
		FAILF("a receive completed after the daemon was killed");
	if (rc < 0)
		FAILF("no error 30 s after the daemon was killed");
	printf("    rank %d: the receive failed %.2f s after the daemon was killed\n", rank, (double)(h_now() - t0) / 1e9);
	if (h_isend(s, b, 10, NULL, &sq) == ncclSuccess && sq)
		FAILF("an isend was taken after the daemon was gone");
	return close_pair(s, r, l);
}

/* One message at a time each way (HARNESS_MANY/10 round trips of 8
 * bytes): prints the mean round trip; checks only the bytes. */
static int64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int c_pingpong(int rank, int n)
{
	(void)n;
	const char *e = getenv("HARNESS_MANY");
	long rounds = (e ? atol(e) : 250000) / 10;
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	uint8_t b[8];
	size_t got;
	int64_t t0 = h_now(), c0 = cpu_ns();
	for (long i = 0; i < rounds; i++) {
		if (rank == 0) {
			memset(b, (int)i, sizeof b);
			if (h_send_wait(s, b, sizeof b) || h_recv_wait(r, b, sizeof b, &got))
				return 1;
		} else {
			if (h_recv_wait(r, b, sizeof b, &got) || h_send_wait(s, b, got))
				return 1;
		}
		if (got != 8 || b[7] != (uint8_t)i)
			FAILF("round %ld", i);
	}
	/* the CPU of the whole rank (the test loop spins: about the round
	 * trip; the progress thread sleeps while test polls) */
	printf("    rank %d: %ld round trips of 8 bytes: %.1f us each, %.1f us of the rank's CPU each\n", rank, rounds,
	       (double)(h_now() - t0) / 1e3 / (double)rounds, (double)(cpu_ns() - c0) / 1e3 / (double)rounds);
	return close_pair(s, r, l);
}

/* v10's trafficClass names the Homa priority of a send comm's messages
 * (their unscheduled packets): 96 is level 3, counted at close; one
 * outside 0 to 255 is refused at connect. v8 and v9 have no class: the
 * same exchange, at the priorities sizes give. */
static int c_traffic_class(int rank, int n)
{
	(void)n;
	void *s, *r, *l;
	if (h_version >= 10) {
		char mine[NCCL_NET_HANDLE_MAXSIZE];
		void *bad = NULL;
		CHECK(h_listen(mine, &l), "listen");
		if (h_connect(mine, 300, &bad) != ncclInvalidArgument || bad)
			FAILF("connect with trafficClass 300 was not refused");
		if (!h_warned("trafficClass 300 is not a traffic class"))
			FAILF("no WARN line for trafficClass 300");
		CHECK(h_close_listen(l), "closeListen");
	}
	if (h_connect_pair_tc(rank ^ 1, rank ^ 1, 96, &s, &r, &l))
		return 1;
	static uint8_t b[100000];
	for (int i = 0; i < 20; i++) {
		size_t sz = i % 2 ? sizeof b : 100, got;
		if (rank == 0) {
			h_fill(b, sz, (uint64_t)i);
			if (h_send_wait(s, b, sz) || h_recv_wait(r, b, sizeof b, &got))
				return 1;
		} else {
			if (h_recv_wait(r, b, sizeof b, &got) || h_send_wait(s, b, got))
				return 1;
		}
		if (got != sz || h_check(b, sz, (uint64_t)i, "message"))
			FAILF("message %d: %zu bytes of %zu", i, got, sz);
	}
	if (close_pair(s, r, l))
		return 1;
	if (h_version >= 10 && !h_informed("trafficClass 96: 20 at Homa priority 3"))
		FAILF("no INFO line at close with \"trafficClass 96: 20 at Homa priority 3\"");
	if (h_warned("cannot send at a named priority"))
		FAILF("the daemon refused the priority");
	return 0;
}

/* A sender that sends more than the receive posted for it (a peer that
 * sends more than NCCL announced): the receive fails naming both sizes
 * and nothing is written past its buffer; the send fails too when the
 * receive was posted before it came (else it was taken, early), and the
 * sender's next one fails in any case: the receiving comm is closed. */
static int c_too_big(int rank, int n)
{
	(void)n;
	void *s, *r, *l;
	if (h_connect_pair(rank ^ 1, rank ^ 1, &s, &r, &l))
		return 1;
	static uint8_t b[3000];
	if (rank == 0) {
		void *q = NULL;
		while (!q)
			CHECK(h_isend(s, b, 2000, NULL, &q), "isend");
		int rc = h_wait_req(q, NULL, 30000000000ll);
		if (rc < 0)
			FAILF("the 2,000-byte send did not end");
		h_wait(1); /* the receive has failed */
		q = NULL;
		rc = 0;
		int64_t t0 = h_now();
		while (!q && rc == 0 && h_now() - t0 < 30000000000ll)
			rc = h_isend(s, b, 10, NULL, &q);
		if (q)
			rc = h_wait_req(q, NULL, 30000000000ll);
		if (rc <= 0)
			FAILF("a send after the receiver failed the comm did not fail");
	} else {
		memset(b, 0xAA, sizeof b);
		void *q = NULL;
		while (!q)
			CHECK(h_irecv(r, b, 1000, NULL, &q), "irecv");
		if (h_wait_req(q, NULL, 30000000000ll) <= 0)
			FAILF("a receive of 1,000 bytes took a 2,000-byte message");
		if (!h_warned("is 2000 bytes, longer than its receive's 1000"))
			FAILF("no warning naming the sizes");
		h_signal(0);
		for (size_t k = 0; k < sizeof b; k++)
			if (b[k] != 0xAA)
				FAILF("byte %zu of the buffer written", k);
	}
	return close_pair(s, r, l);
}

/* handle_addr is the Homa address a plugin handle names (the plugin's
 * handle layout, src/internal.h: family at byte 6, port at 8, the
 * address at 24). */
static homa_addr handle_addr(const char *h)
{
	homa_addr a = {.family = (uint8_t)h[6]};
	memcpy(&a.port, h + 8, sizeof a.port);
	memcpy(a.ip, h + 24, 16);
	return a;
}

/* stranger_ask sends msg (n bytes) to dst from a session of its own and
 * waits for the answer: 0 when it came and its status (the first 4
 * bytes) was not 0 (refused), else 1. */
static int stranger_ask(homa_client *c, homa_addr dst, const void *msg, size_t n, const char *what)
{
	struct iovec iov = {(void *)msg, n};
	uint64_t id;
	int rc = homa_send(c, &dst, &iov, 1, 0, 0, &id);
	if (rc)
		FAILF("%s: send: %s", what, homa_strerror(rc));
	homa_msg m;
	rc = homa_wait(c, id, &m, 30000000000ll);
	if (rc)
		FAILF("%s: no answer: %s", what, homa_strerror(rc));
	uint32_t status = 0;
	if (m.length >= 4)
		memcpy(&status, m.data, 4);
	homa_msg_release(c, &m);
	if (status == 0)
		FAILF("%s: answered with status 0 (taken)", what);
	return 0;
}

/* A stranger's messages to the plugin's port (junk, a forged DATA, a
 * CONNECT with a guessed key) are answered with a refusal and dropped,
 * and a connect with a handle of another listen's key (another job's)
 * fails; the real comm beside them is untouched. */
static int c_strangers(int rank, int n)
{
	(void)n;
	char h[NCCL_NET_HANDLE_MAXSIZE];
	if (rank == 0) {
		void *l, *r = NULL;
		CHECK(h_listen(h, &l), "listen");
		h_put_handle(1, h);
		h_put_handle(2, h);
		while (!r)
			CHECK(h_accept(l, &r), "accept");
		for (int i = 0; i < 3; i++) {
			uint8_t b[2000];
			size_t got;
			if (h_recv_wait(r, b, sizeof b, &got) || got != 1000 || h_check(b, got, (uint64_t)i, "message"))
				FAILF("message %d", i);
			if (i == 0)
				h_signal(2); /* the stranger goes now */
			if (i == 1)
				h_wait(2);
		}
		void *r2 = NULL;
		CHECK(h_accept(l, &r2), "accept");
		if (r2)
			FAILF("a stranger's connect was accepted");
		CHECK(h_close_recv(r), "closeRecv");
		/* counted: 2 junk and 15 forged DATA; 15 forged CONNECTs and another key's */
		if (!h_informed("17 strangers, 16 refused connects"))
			FAILF("the device's counters at close do not say 17 strangers and 16 refused connects");
		CHECK(h_close_listen(l), "closeListen");
	} else if (rank == 1) {
		void *s = NULL;
		h_get_handle(0, h);
		while (!s)
			CHECK(h_connect(h, -1, &s), "connect");
		uint8_t b[1000];
		for (int i = 0; i < 3; i++) {
			h_fill(b, sizeof b, (uint64_t)i);
			if (h_send_wait(s, b, sizeof b))
				return 1;
		}
		CHECK(h_close_send(s), "closeSend");
	} else {
		h_get_handle(0, h);
		h_wait(0);
		homa_client *c;
		char err[200];
		if (homa_attach(getenv("HOMA_NCCL_SOCKET"), NULL, &c, err, sizeof err))
			FAILF("attach: %s", err);
		homa_addr port = handle_addr(h);
		uint8_t junk[64];
		h_fill(junk, sizeof junk, 5);
		if (stranger_ask(c, port, junk, 10, "10 bytes of junk") || stranger_ask(c, port, junk, sizeof junk, "64 bytes of junk"))
			return 1;
		/* a DATA and a CONNECT in the plugin's framing with guessed ids and keys */
		uint8_t w[40] = {0};
		uint32_t magic = 0x314e4348u;
		memcpy(w, &magic, 4);
		w[5] = 1; /* version */
		for (uint32_t id = 0x1001; id < 0x1010; id++) {
			memcpy(w + 8, &id, 4);
			w[4] = 2; /* DATA */
			if (stranger_ask(c, port, w, sizeof w, "a forged DATA"))
				return 1;
			w[4] = 1; /* CONNECT */
			if (stranger_ask(c, port, w, sizeof w, "a forged CONNECT"))
				return 1;
		}
		homa_close(c);
		homa_destroy(c);
		/* another job's handle: the same listen, another key */
		h[16] ^= 0x5a;
		void *s = NULL;
		ncclResult_t rc = ncclSuccess;
		int64_t t0 = h_now();
		while (!s && rc == ncclSuccess && h_now() - t0 < 30000000000ll)
			rc = h_connect(h, -1, &s);
		if (s || rc == ncclSuccess)
			FAILF("connect with another key: %s", s ? "a comm" : "no answer in 30 s");
		h_signal(0);
	}
	return 0;
}

const h_case h_cases[] = {
	{"props", 1, c_props, "getProperties, regMr of host and CUDA memory", NULL},
	{"orders", 2, c_orders, "connect before accept and after, neither blocking", NULL},
	{"sizes", 2, c_sizes, "0 B to 16 MiB into larger receives", NULL},
	{"pipeline", 2, c_pipeline, "8 x 512 KiB in flight each way, in order", NULL},
	{"inflight", 2, c_inflight, "128 requests in flight on one comm", NULL},
	{"backpressure", 2, c_backpressure, "NULL requests past the credit, then on", NULL},
	{"ring", 4, c_ring, "a ring over 4 ranks", NULL},
	{"listen_reuse", 4, c_listen_reuse, "one listen comm, three senders", NULL},
	{"close_inflight", 2, c_close_inflight, "close with requests in flight", NULL},
	{"strangers", 3, c_strangers, "strangers answered and dropped, another job's handle refused", NULL},
	{"many", 2, c_many, "HARNESS_MANY messages each way, 16 in flight", NULL},
	{"no_alloc", 2, c_no_alloc, "no allocation per message once warm", NULL},
	{"old_request", 2, c_old_request, "a request past HOMA_NCCL_WARN_S logged once", "HOMA_NCCL_WARN_S=1"},
	{"daemon_gone", 2, c_daemon_gone, "the daemon killed: every rank's requests fail", NULL},
	{"pingpong", 2, c_pingpong, "one message at a time each way (prints the round trip)", NULL},
	{"traffic_class", 2, c_traffic_class, "v10's trafficClass sends at its Homa priority; a bad one is refused", NULL},
	{"too_big", 2, c_too_big, "a message longer than its receive fails both ends", NULL},
	{"peer_killed", 2, c_peer_killed, "a sender killed: the receive fails", NULL},
	{0, 0, 0, 0, 0},
};
