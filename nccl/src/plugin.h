/*
 * plugin.h: the homa NCCL net plugin's one implementation, which the
 * version tables of tables.c adapt (sizes as size_t, v10's traffic class
 * and profiler handles). See ../README.md for the design.
 */
#ifndef HOMA_NCCL_PLUGIN_H
#define HOMA_NCCL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_net.h"

/* What getProperties reports, in the widest version's terms. */
typedef struct hn_props {
	char *name;
	int speed_mbps;
	int port;
	float latency_us;
	int max_comms;
	int max_recvs;
	size_t max_bytes;
} hn_props;

ncclResult_t hn_init(ncclDebugLogger_t log);
ncclResult_t hn_devices(int *ndev);
ncclResult_t hn_get_properties(int dev, hn_props *p);
ncclResult_t hn_listen(int dev, void *handle, void **listen_comm);
ncclResult_t hn_connect(int dev, int traffic_class, void *handle, void **send_comm);
ncclResult_t hn_accept(void *listen_comm, void **recv_comm);
ncclResult_t hn_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t hn_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			      void **mhandle);
ncclResult_t hn_dereg_mr(void *comm, void *mhandle);
ncclResult_t hn_isend(void *send_comm, void *data, size_t size, int tag, void **request);
ncclResult_t hn_irecv(void *recv_comm, int n, void **data, const size_t *sizes, int *tags, void **request);
ncclResult_t hn_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles, void **request);
ncclResult_t hn_test(void *request, int *done, int *sizes);
ncclResult_t hn_close_send(void *send_comm);
ncclResult_t hn_close_recv(void *recv_comm);
ncclResult_t hn_close_listen(void *listen_comm);

#endif
