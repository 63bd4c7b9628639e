/*
 * _native.h: what the three files of homa_dpdk's binding over libhoma
 * (native/include/homa.h) share. _native.c: the module, the exceptions
 * and the statuses mapped to them; _native_client.c: Client, the session;
 * _native_message.c: Message and _Pages (a received message and the pool
 * pages under it) and the buffers of a send gathered as iovecs.
 *
 * Everything protocol-shaped (rings, entries, arena, pool, completions,
 * waits) is libhoma's; the binding only turns Python objects into the
 * library's arguments and its statuses into the exceptions of errors.py.
 * The GIL is released around every libhoma call that takes the client's
 * mutex (homa_msg_release, which never waits for it, excepted).
 */
#ifndef HOMA_DPDK_NATIVE_H
#define HOMA_DPDK_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <sys/uio.h>

#include "homa.h"

#define WAIT_SLICE_NS 100000000LL /* 100 ms: a wait returns to Python this often, to see signals */
#define IOV_STACK 8               /* buffers of a send gathered without malloc */

/* Around every call that may block: the GIL released. */
#define CALL_BEGIN(o) Py_BEGIN_ALLOW_THREADS
#define CALL_END(o) Py_END_ALLOW_THREADS

/* What errors.py and client.py give _init(): the exception classes, and
 * the helpers errors._error_for(code, rpc_id, what, peer) and
 * client._to_buffer(obj) (a contiguous buffer of obj's bytes, or TypeError). */
extern PyObject *hn_HomaError, *hn_WaitTimeout, *hn_ArenaFull, *hn_AttachError, *hn_RefusedError, *hn_LayoutError,
	*hn_UnsupportedPlatform, *hn_error_for, *hn_to_buffer;

/* A session: the libhoma client and what the binding keeps beside it. */
typedef struct {
	PyObject_HEAD
	homa_client *c;       /* NULL until attached */
	int closed;           /* close() done */
	int closing;          /* close() begun */
	int woken;            /* wake() called: the ETIMEDOUT it causes is the caller's */
	double op_timeout;    /* seconds, for messages */
	uint32_t max_message; /* the smaller of the caller's and the region's */
	uint64_t arena_size;
	homa_layout layout;
	PyObject *addr_host;  /* the last address parsed: host (str), port, result */
	long addr_port;
	homa_addr addr;
} ClientObject;

/* The receive-pool pages of one message: a read-only buffer; its dealloc
 * gives them back. It holds its Client, so the mapping (unmapped by
 * homa_destroy, in Client's dealloc) outlives every buffer over it. */
typedef struct {
	PyObject_HEAD
	ClientObject *client;
	homa_msg m;
} PagesObject;

/* A received request or response: its fields and, until released, its _Pages. */
typedef struct {
	PyObject_HEAD
	ClientObject *client;
	PagesObject *pages; /* NULL once released */
	PyObject *data;     /* the memoryview handed out as data, once asked for */
	PyObject *peer;     /* (ip, port), once asked for */
	homa_msg req;       /* a copy of the message's fields, for homa_reply */
} MessageObject;

/* The buffers of one send or reply as iovecs, and the exports that hold them. */
typedef struct {
	struct iovec iov_stack[IOV_STACK];
	Py_buffer view_stack[IOV_STACK];
	struct iovec *iov;
	Py_buffer *views;
	int n, held;
	size_t total;
} Gather;

extern PyTypeObject hn_ClientType, hn_MessageType, hn_PagesType;

/* _native.c */
int hn_ready(void);      /* _init was called; else RuntimeError */
int64_t hn_now_ns(void); /* CLOCK_MONOTONIC */
const char *hn_secs(double s, char *buf, size_t len); /* seconds as Python's float repr */
int hn_check_open(ClientObject *o);                   /* 1, or 0 with HomaError("the client is closed") */
PyObject *hn_ended_error(void);
PyObject *hn_peer_tuple(const homa_addr *a);          /* (ip str, port), or None */
PyObject *hn_raise_code(int code, uint64_t rpc_id, const char *what, const homa_addr *peer);
PyObject *hn_raise_status(ClientObject *o, int rc, uint64_t rpc_id, const char *what);
int64_t hn_timeout_ns(PyObject *t); /* seconds or None as ns (-1: no limit); -2 with an exception */

/* _native_client.c */
void hn_give_back(ClientObject *o, homa_msg *m);

/* _native_message.c */
PyObject *hn_new_message(ClientObject *o, homa_msg *m); /* a Message owning m (REQUEST or RESPONSE) */
int hn_gather(ClientObject *o, Gather *g, PyObject *const *objs, Py_ssize_t n);
void hn_gather_free(Gather *g);

#endif
