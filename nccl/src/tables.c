/*
 * tables.c: the tables NCCL looks up, ncclNetPlugin_v10, _v9 and _v8,
 * each a thin adapter over plugin.h's one implementation. NCCL takes the
 * newest it knows.
 */
#include <stddef.h>

#include "plugin.h"

/* The layouts NCCL reads (LP64): a mismatch here would be a misread
 * table, so the build fails instead. */
_Static_assert(sizeof(void *) == 8, "LP64 only");
_Static_assert(sizeof(ncclNet_v8_t) == 19 * 8, "v8 has 19 entries");
_Static_assert(sizeof(ncclNet_v9_t) == 20 * 8, "v9 has 20 entries");
_Static_assert(sizeof(ncclNet_v10_t) == 20 * 8, "v10 has 20 entries");
_Static_assert(offsetof(ncclNet_v8_t, isend) == 10 * 8 && offsetof(ncclNet_v8_t, test) == 13 * 8, "v8 order");
_Static_assert(offsetof(ncclNet_v10_t, makeVDevice) == 19 * 8, "v10 order");
_Static_assert(offsetof(ncclNetProperties_v8_t, ptrSupport) == 24 && offsetof(ncclNetProperties_v8_t, speed) == 32 &&
		       offsetof(ncclNetProperties_v8_t, latency) == 40 && offsetof(ncclNetProperties_v8_t, maxRecvs) == 48 &&
		       sizeof(ncclNetProperties_v8_t) == 64,
	       "v8 properties");
_Static_assert(offsetof(ncclNetProperties_v9_t, forceFlush) == 32 && offsetof(ncclNetProperties_v9_t, vProps) == 64 &&
		       offsetof(ncclNetProperties_v9_t, maxP2pBytes) == 88 && sizeof(ncclNetProperties_v9_t) == 104,
	       "v9 properties");
_Static_assert(sizeof(ncclNetDeviceHandle_v8_t) == 32, "device handle");

#define EXPORT __attribute__((visibility("default")))

static ncclResult_t init_v8(ncclDebugLogger_t log) { return hn_init(log); }

static ncclResult_t init_v10(ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
	(void)prof; /* no profiler events */
	return hn_init(log);
}

#define FILL_COMMON(p, h)                        \
	do {                                     \
		(p)->name = (h).name;            \
		(p)->pciPath = NULL;             \
		(p)->guid = (uint64_t)dev;       \
		(p)->ptrSupport = NCCL_PTR_HOST; \
		(p)->regIsGlobal = 0;            \
		(p)->speed = (h).speed_mbps;     \
		(p)->port = (h).port;            \
		(p)->latency = (h).latency_us;   \
		(p)->maxComms = (h).max_comms;   \
		(p)->maxRecvs = (h).max_recvs;   \
		(p)->netDeviceType = NCCL_NET_DEVICE_HOST; \
		(p)->netDeviceVersion = 0;       \
	} while (0)

static ncclResult_t props_v8(int dev, ncclNetProperties_v8_t *p)
{
	hn_props h;
	ncclResult_t rc = hn_get_properties(dev, &h);
	if (rc == ncclSuccess)
		FILL_COMMON(p, h);
	return rc;
}

static ncclResult_t props_v9(int dev, ncclNetProperties_v9_t *p)
{
	hn_props h;
	ncclResult_t rc = hn_get_properties(dev, &h);
	if (rc != ncclSuccess)
		return rc;
	FILL_COMMON(p, h);
	p->forceFlush = 0;
	p->vProps.ndevs = 1;
	p->vProps.devs[0] = dev;
	p->maxP2pBytes = h.max_bytes;
	p->maxCollBytes = h.max_bytes;
	return ncclSuccess;
}

static ncclResult_t connect_v8(int dev, void *handle, void **send_comm, ncclNetDeviceHandle_v8_t **dev_comm)
{
	(void)dev_comm; /* no device offload */
	return hn_connect(dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, send_comm);
}

static ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t *config, void *handle, void **send_comm,
				ncclNetDeviceHandle_v10_t **dev_comm)
{
	(void)dev_comm;
	return hn_connect(dev, config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, send_comm);
}

static ncclResult_t accept_v8(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_v8_t **dev_comm)
{
	(void)dev_comm;
	return hn_accept(listen_comm, recv_comm);
}

static ncclResult_t isend_v8(void *send_comm, void *data, int size, int tag, void *mhandle, void **request)
{
	(void)mhandle;
	if (size < 0)
		return ncclInvalidArgument;
	return hn_isend(send_comm, data, (size_t)size, tag, request);
}

static ncclResult_t isend_v9(void *send_comm, void *data, size_t size, int tag, void *mhandle, void **request)
{
	(void)mhandle;
	return hn_isend(send_comm, data, size, tag, request);
}

static ncclResult_t isend_v10(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
			      void **request)
{
	(void)mhandle, (void)phandle;
	return hn_isend(send_comm, data, size, tag, request);
}

static ncclResult_t irecv_v8(void *recv_comm, int n, void **data, int *sizes, int *tags, void **mhandles,
			     void **request)
{
	(void)mhandles;
	if (n != 1)
		return hn_irecv(recv_comm, n, data, NULL, tags, request); /* refused, and logged */
	if (sizes[0] < 0)
		return ncclInvalidArgument;
	size_t sz = (size_t)sizes[0];
	return hn_irecv(recv_comm, n, data, &sz, tags, request);
}

static ncclResult_t irecv_v9(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
			     void **request)
{
	(void)mhandles;
	return hn_irecv(recv_comm, n, data, sizes, tags, request);
}

static ncclResult_t irecv_v10(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
			      void **phandles, void **request)
{
	(void)mhandles, (void)phandles;
	return hn_irecv(recv_comm, n, data, sizes, tags, request);
}

EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = "homa",
	.init = init_v10,
	.devices = hn_devices,
	.getProperties = props_v9,
	.listen = hn_listen,
	.connect = connect_v10,
	.accept = accept_v8,
	.regMr = hn_reg_mr,
	.regMrDmaBuf = hn_reg_mr_dmabuf,
	.deregMr = hn_dereg_mr,
	.isend = isend_v10,
	.irecv = irecv_v10,
	.iflush = hn_iflush,
	.test = hn_test,
	.closeSend = hn_close_send,
	.closeRecv = hn_close_recv,
	.closeListen = hn_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = NULL,
};

EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = "homa",
	.init = init_v8,
	.devices = hn_devices,
	.getProperties = props_v9,
	.listen = hn_listen,
	.connect = connect_v8,
	.accept = accept_v8,
	.regMr = hn_reg_mr,
	.regMrDmaBuf = hn_reg_mr_dmabuf,
	.deregMr = hn_dereg_mr,
	.isend = isend_v9,
	.irecv = irecv_v9,
	.iflush = hn_iflush,
	.test = hn_test,
	.closeSend = hn_close_send,
	.closeRecv = hn_close_recv,
	.closeListen = hn_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = NULL,
};

EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = "homa",
	.init = init_v8,
	.devices = hn_devices,
	.getProperties = props_v8,
	.listen = hn_listen,
	.connect = connect_v8,
	.accept = accept_v8,
	.regMr = hn_reg_mr,
	.regMrDmaBuf = hn_reg_mr_dmabuf,
	.deregMr = hn_dereg_mr,
	.isend = isend_v8,
	.irecv = irecv_v8,
	.iflush = hn_iflush,
	.test = hn_test,
	.closeSend = hn_close_send,
	.closeRecv = hn_close_recv,
	.closeListen = hn_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
};
