/*
 * harness.h: the conformance harness. It loads the plugin with dlopen and
 * calls one of its tables (v8, v9 or v10) as NCCL does, from 2 to 8
 * processes (ranks) forked per case, which pass connect handles through
 * pipes. Each rank is a fresh process: the plugin's state is its own.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_net.h"

/* The table in use, called through version-neutral wrappers. */
extern int h_version;
ncclResult_t h_init(void);
ncclResult_t h_devices(int *n);
/* Properties in v9's form (v8: maxP2pBytes and maxCollBytes 0). */
ncclResult_t h_props(int dev, ncclNetProperties_v9_t *p);
ncclResult_t h_listen(void *handle, void **listen);
ncclResult_t h_connect(void *handle, int traffic_class, void **send);
ncclResult_t h_accept(void *listen, void **recv);
ncclResult_t h_regmr(void *comm, void *data, size_t size, int type, void **mh);
ncclResult_t h_deregmr(void *comm, void *mh);
ncclResult_t h_isend(void *send, void *data, size_t size, void *mh, void **req);
ncclResult_t h_irecv(void *recv, void *data, size_t size, void *mh, void **req);
ncclResult_t h_test(void *req, int *done, int *size);
ncclResult_t h_close_send(void *c);
ncclResult_t h_close_recv(void *c);
ncclResult_t h_close_listen(void *c);

/* The ranks of a case: rank r of n runs fn; handles go through
 * h_put_handle / h_get_handle (to and from another rank). */
typedef int (*case_fn)(int rank, int n);
void h_put_handle(int to, const void *handle);
void h_get_handle(int from, void *handle);
/* h_signal / h_wait: a byte from one rank to another (ordering steps). */
void h_signal(int to);
/* The pid of a rank forked before this one (a lower rank). */
#include <sys/types.h>
pid_t h_peer_pid(int rank);
void h_wait(int from);

/* Connections made the way NCCL makes them, each call retried until it
 * yields a comm: rank sends to `to` and receives from `from`. */
int h_connect_pair(int to, int from, void **send, void **recv, void **listen);

/* Blocking helpers over isend / irecv / test (retrying NULL requests). */
int h_send_wait(void *send, void *data, size_t size);
int h_recv_wait(void *recv, void *data, size_t room, size_t *got);
int h_wait_req(void *req, int *size, int64_t limit_ns);

void h_fill(uint8_t *b, size_t n, uint64_t seed);
int h_check(const uint8_t *b, size_t n, uint64_t seed, const char *what);
int64_t h_now(void);

#define FAILF(...)                                                           \
	do {                                                                 \
		fprintf(stderr, "    rank %d: ", h_rank);                    \
		fprintf(stderr, __VA_ARGS__);                                \
		fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);            \
		return 1;                                                    \
	} while (0)
#define CHECK(rc, what)                                                      \
	do {                                                                 \
		ncclResult_t r_ = (rc);                                      \
		if (r_ != ncclSuccess)                                       \
			FAILF("%s: ncclResult %d", what, (int)r_);           \
	} while (0)

extern int h_rank;

/* The cases (cases.c): name, ranks, function. */
typedef struct h_case {
	const char *name;
	int ranks;
	case_fn fn;
	const char *what;
	const char *env; /* NAME=VALUE set in each rank before init, or NULL */
} h_case;

/* WARN lines the plugin logged that contain needle, in this rank. */
int h_warned(const char *needle);
/* Allocations made in this process since h_count_allocs(1) (malloc,
 * calloc, realloc, any thread); -1 under the sanitizers (not counted). */
void h_count_allocs(int on);
long h_allocs(void);
extern const h_case h_cases[];

#endif
