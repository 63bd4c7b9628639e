/*
 * ranks.h: what the conformance harness and the benchmark share (ranks.c):
 * the plugin loaded with dlopen, one of its tables (v8, v9 or v10) called
 * through version-neutral wrappers, and pipes between up to 8 forked
 * ranks that carry connect handles, signals and bytes.
 */
#ifndef RANKS_H
#define RANKS_H

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

/* Handles go through h_put_handle / h_get_handle (to and from another
 * rank). */
void h_put_handle(int to, const void *handle);
void h_get_handle(int from, void *handle);
/* h_signal / h_wait: a byte from one rank to another (ordering steps). */
void h_signal(int to);
void h_wait(int from);

/* Connections made the way NCCL makes them, each call retried until it
 * yields a comm: rank sends to `to` and receives from `from`. */
int h_connect_pair(int to, int from, void **send, void **recv, void **listen);
/* h_connect_pair with v10's trafficClass for the send comm (-1: undefined) */
int h_connect_pair_tc(int to, int from, int traffic_class, void **send, void **recv, void **listen);

/* Blocking helpers over isend / irecv / test (retrying NULL requests). */
int h_send_wait(void *send, void *data, size_t size);
int h_recv_wait(void *recv, void *data, size_t room, size_t *got);
int h_wait_req(void *req, int *size, int64_t limit_ns);

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

/* WARN (INFO) lines of the last 64 the plugin logged that contain
 * needle, in this rank. */
int h_warned(const char *needle);
int h_informed(const char *needle);

/* The pipes of n ranks, made before the ranks are forked (h_open_pipes:
 * 0, or -1 with perror) and closed by the parent after (h_close_pipes). */
int h_open_pipes(int n);
void h_close_pipes(int n);
/* Bytes from this rank to another, in order with handles and signals;
 * a rank gone exits the process (2). */
void h_put_bytes(int to, const void *b, size_t n);
void h_get_bytes(int from, void *b, size_t n);
void h_full_write(int fd, const void *b, size_t n);
void h_full_read(int fd, void *b, size_t n);

/* In forked rank r: sets h_rank, HOMA_NCCL_SOCKET from HARNESS_SOCKETS
 * (rank r gets the (r mod n)-th of its n), puts env (NAME=VALUE, or
 * NULL), then loads plugin and calls the table's init (plugin NULL: not
 * loaded). 0, or the exit status to leave with. */
int h_start_rank(const char *plugin, int r, const char *env);

#endif
