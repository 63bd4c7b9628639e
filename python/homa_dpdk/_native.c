/*
 * _native.c: homa_dpdk's binding over libhoma (native/include/homa.h), the
 * one C implementation of the worker protocol. Everything protocol-shaped
 * (rings, entries, arena, pool, completions, waits) is libhoma's; this file
 * only turns Python objects into the library's arguments and its statuses
 * into the package's exceptions (errors.py).
 *
 * Objects:
 *   Client   the session (homa_client *); the Python class homa_dpdk.Client
 *            subclasses it for the docstring, call() and the context manager.
 *   Message  a received request or response: its fields, and a _Pages.
 *   _Pages   exports the message's bytes in the receive pool (read-only
 *            buffer protocol). memoryviews and numpy arrays made from
 *            Message.data hold it; its dealloc gives the pages back
 *            (homa_msg_release). It holds a reference to its Client, so
 *            the mapping (unmapped by homa_destroy, in Client's dealloc)
 *            outlives every buffer over it.
 *
 * The GIL is released around every libhoma call that takes the client's
 * mutex (homa_msg_release, which never waits for it, excepted). Waits run
 * in slices of WAIT_SLICE_NS, so that they see signals (KeyboardInterrupt).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <arpa/inet.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "homa.h"

#define WAIT_SLICE_NS 100000000LL /* 100 ms: a wait returns to Python this often */
#define IOV_STACK 8               /* buffers of a send gathered without malloc */

/* ------------------------------------------------------------------ */
/* What errors.py gives _init(): the exception classes and helpers.   */

static PyObject *HomaError, *WaitTimeout, *ArenaFull, *AttachError, *RefusedError, *LayoutError,
	*UnsupportedPlatform;
static PyObject *error_for; /* errors._error_for(code, rpc_id, what, peer) */
static PyObject *to_buffer; /* client._to_buffer(obj): a contiguous buffer of obj's bytes, or TypeError */

static int ready(void)
{
	if (HomaError == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "homa_dpdk._native: _init was not called");
		return 0;
	}
	return 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* Client                                                             */

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

static PyTypeObject ClientType, MessageType, PagesType;

/* Gives m's pages back (homa_msg_release never waits for the client's
 * mutex: when another thread holds it, the pages are left for that thread
 * and it is woken to give them back). */
static void give_back(ClientObject *o, homa_msg *m)
{
	if (o->c != NULL)
		homa_msg_release(o->c, m);
}

/* Around every call that may block: the GIL released. */
#define CALL_BEGIN(o) Py_BEGIN_ALLOW_THREADS
#define CALL_END(o) Py_END_ALLOW_THREADS

/* Seconds as Python's repr of a float writes them ("10.0"), into buf. */
static const char *secs(double s, char *buf, size_t len)
{
	char *t = PyOS_double_to_string(s, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
	snprintf(buf, len, "%s", t ? t : "?");
	PyMem_Free(t);
	return buf;
}

static PyObject *ended_error(void)
{
	PyErr_SetString(HomaError, "homa_dpdk: the session has ended: the daemon closed the control connection "
				   "(it exited, or ended this worker)");
	return NULL;
}

static int check_open(ClientObject *o)
{
	if (!ready())
		return 0;
	if (o->c == NULL || o->closed || o->closing) {
		PyErr_SetString(HomaError, "homa_dpdk: the client is closed");
		return 0;
	}
	return 1;
}

static PyObject *peer_tuple(const homa_addr *a)
{
	char buf[64];
	if (a->family == 0)
		Py_RETURN_NONE;
	if (homa_addr_format(a, buf, sizeof buf) == NULL)
		buf[0] = 0;
	return Py_BuildValue("(sH)", buf, a->port);
}

/* Raises the exception of a protocol error code (> 0) through
 * errors._error_for(code, rpc_id, what, peer); peer may be NULL (None). */
static PyObject *raise_code(int code, uint64_t rpc_id, const char *what, const homa_addr *peer)
{
	PyObject *p = peer ? peer_tuple(peer) : (Py_INCREF(Py_None), Py_None);
	if (p == NULL)
		return NULL;
	PyObject *e = PyObject_CallFunction(error_for, "iKsO", code, (unsigned long long)rpc_id, what ? what : "", p);
	Py_DECREF(p);
	if (e != NULL) {
		PyErr_SetObject((PyObject *)Py_TYPE(e), e);
		Py_DECREF(e);
	}
	return NULL;
}

/* Raises the exception of status rc of a submission described by what. */
static PyObject *raise_status(ClientObject *o, int rc, uint64_t rpc_id, const char *what)
{
	char sb[32];
	if (rc > 0)
		return raise_code(rc, rpc_id, what, NULL);
	switch (rc) {
	case HOMA_ETIMEDOUT:
		PyErr_Format(WaitTimeout, "homa_dpdk: no completion for %s within %s s (is the daemon's engine running?)",
			     what, secs(o->op_timeout, sb, sizeof sb));
		return NULL;
	case HOMA_EDEAD:
		return ended_error();
	case HOMA_ECLOSED:
		PyErr_SetString(HomaError, "homa_dpdk: the client is closed");
		return NULL;
	case HOMA_ESQFULL:
		PyErr_Format(HomaError, "homa_dpdk: the submission ring stayed full for %s s: the daemon is not reading it",
			     secs(o->op_timeout, sb, sizeof sb));
		return NULL;
	case HOMA_ENORPC:
		return raise_code(HOMA_ERR_NO_RPC, rpc_id, what, NULL);
	case HOMA_ENOMEM:
		return PyErr_NoMemory();
	case HOMA_EINVAL:
		PyErr_Format(PyExc_ValueError, "homa_dpdk: %s: %s", what, homa_strerror(rc));
		return NULL;
	default:
		PyErr_Format(HomaError, "homa_dpdk: %s: %s", what, homa_strerror(rc));
		return NULL;
	}
}

/* Seconds (None: no limit) as nanoseconds (-1: no limit); -2 on error. */
static int64_t timeout_ns(PyObject *t)
{
	if (t == NULL || t == Py_None)
		return -1;
	double s = PyFloat_AsDouble(t);
	if (s == -1.0 && PyErr_Occurred())
		return -2;
	if (s != s) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: timeout is NaN");
		return -2;
	}
	if (s <= 0)
		return 0;
	if (s > 9e9)
		return -1; /* centuries: no limit */
	return (int64_t)(s * 1e9);
}

static int init_client(ClientObject *o, PyObject *args, PyObject *kw)
{
	static char *names[] = {"path", "spin_us", "op_timeout", "max_message", "max_sleep", NULL};
	PyObject *path = NULL, *maxmsg = Py_None;
	double spin_us = 50, op_timeout = 10.0, max_sleep = 1.0;
	if (!ready())
		return -1;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&d$dOd:Client", names, PyUnicode_FSConverter, &path, &spin_us,
					 &op_timeout, &maxmsg, &max_sleep))
		return -1;
	if (o->c != NULL) {
		Py_XDECREF(path);
		PyErr_SetString(PyExc_RuntimeError, "homa_dpdk: Client.__init__ called twice");
		return -1;
	}
	const char *p = path ? PyBytes_AS_STRING(path) : "/run/homa-dpdk/workers.sock";
	homa_options opt;
	homa_options_init(&opt);
	opt.spin_ns = spin_us > 0 ? (int64_t)(spin_us * 1000) : 0;
	opt.op_timeout_ns = op_timeout > 0 ? (int64_t)(op_timeout * 1e9) : 0;
	opt.max_sleep_ns = max_sleep > 0.001 ? (int64_t)(max_sleep * 1e9) : 1000000;
	if (maxmsg != Py_None) {
		long long v = PyLong_AsLongLong(maxmsg);
		if (v == -1 && PyErr_Occurred()) {
			Py_XDECREF(path);
			return -1;
		}
		opt.max_message = v < 1 ? 1 : v > 0x7fffffff ? 0x7fffffff : (uint32_t)v;
	}
	o->op_timeout = op_timeout;
	char err[256] = "";
	homa_client *c = NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = homa_attach(p, &opt, &c, err, sizeof err);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		if (rc == HOMA_EREFUSED)
			PyErr_Format(RefusedError, "homa_dpdk: %s", err[0] ? err : homa_strerror(rc));
		else if (rc == HOMA_ELAYOUT) {
			/* homa_attach says why only as text: "layout Field = value: reason" */
			char field[64] = "header", reason[256] = "";
			unsigned long long value = 0;
			if (sscanf(err, "layout %63s = %llu: %255[^\n]", field, &value, reason) != 3)
				snprintf(reason, sizeof reason, "%s", err);
			PyObject *e = PyObject_CallFunction(LayoutError, "sKs", field, value, reason);
			if (e != NULL) {
				PyErr_SetObject(LayoutError, e);
				Py_DECREF(e);
			}
		} else if (rc == HOMA_EPLATFORM)
			PyErr_Format(UnsupportedPlatform, "homa_dpdk: %s", err[0] ? err : homa_strerror(rc));
		else if (rc == HOMA_ENOMEM)
			PyErr_NoMemory();
		else if (rc == HOMA_EATTACH)
			PyErr_Format(AttachError, "homa_dpdk: %s", err[0] ? err : homa_strerror(rc));
		else
			PyErr_Format(AttachError, "homa_dpdk: attach to %s: %s", p, err[0] ? err : homa_strerror(rc));
		Py_XDECREF(path);
		return -1;
	}
	Py_XDECREF(path);
	o->c = c;
	homa_get_layout(c, &o->layout);
	o->max_message = homa_max_message(c);
	if (o->max_message > o->layout.max_message)
		o->max_message = o->layout.max_message;
	o->arena_size = homa_arena_size(c);
	return 0;
}

static void close_client(ClientObject *o)
{
	if (o->c == NULL || o->closed)
		return;
	o->closing = 1;
	homa_shutdown(o->c); /* waits of other threads return now */
	CALL_BEGIN(o);
	homa_close(o->c);
	CALL_END(o);
	o->closed = 1;
}

static void dealloc_client(ClientObject *o)
{
	if (o->c != NULL) {
		if (!o->closed) {
			homa_shutdown(o->c);
			homa_close(o->c);
		}
		homa_destroy(o->c);
		o->c = NULL;
	}
	Py_CLEAR(o->addr_host);
	Py_TYPE(o)->tp_free((PyObject *)o);
}

/* addr = (host str, port) as a homa_addr; server: the port is a server port. */
static int parse_addr(ClientObject *o, PyObject *addr, homa_addr *a)
{
	PyObject *host, *port, *seq = NULL;
	if (PyTuple_CheckExact(addr) && PyTuple_GET_SIZE(addr) == 2) {
		host = PyTuple_GET_ITEM(addr, 0);
		port = PyTuple_GET_ITEM(addr, 1);
		if (host == o->addr_host && PyLong_CheckExact(port) && PyLong_AsLong(port) == o->addr_port) {
			*a = o->addr;
			return 0;
		}
	} else {
		seq = PyUnicode_Check(addr) || PyBytes_Check(addr) ? NULL : PySequence_Tuple(addr);
		if (seq == NULL || PyTuple_GET_SIZE(seq) != 2) {
			Py_XDECREF(seq);
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError, "homa_dpdk: an address is (ip str, port), got %R", addr);
			return -1;
		}
		host = PyTuple_GET_ITEM(seq, 0);
		port = PyTuple_GET_ITEM(seq, 1);
	}
	int rc = -1;
	long pn;
	const char *h = PyUnicode_Check(host) ? PyUnicode_AsUTF8(host) : NULL;
	if (h == NULL) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "homa_dpdk: %R is not an IPv4 or IPv6 address", host);
		goto out;
	}
	PyObject *idx = PyNumber_Index(port);
	if (idx == NULL) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "homa_dpdk: port %R is not an integer", port);
		goto out;
	}
	int overflow;
	pn = PyLong_AsLongAndOverflow(idx, &overflow);
	Py_DECREF(idx);
	if (overflow || pn < 1 || pn > HOMA_MAX_SERVER_PORT) {
		PyErr_Format(PyExc_ValueError, "homa_dpdk: port %R not in 1..%d", port, HOMA_MAX_SERVER_PORT);
		goto out;
	}
	if (homa_addr_parse(h, (uint16_t)pn, a) != 0) {
		unsigned char tmp[16];
		if (inet_pton(AF_INET, h, tmp) == 1 || inet_pton(AF_INET6, h, tmp) == 1)
			PyErr_Format(PyExc_ValueError, "homa_dpdk: peer address %s", h);
		else
			PyErr_Format(PyExc_ValueError, "homa_dpdk: %R is not an IPv4 or IPv6 address", host);
		goto out;
	}
	Py_INCREF(host);
	Py_XSETREF(o->addr_host, host);
	o->addr_port = pn;
	o->addr = *a;
	rc = 0;
out:
	Py_XDECREF(seq);
	return rc;
}

/* ------------------------------------------------------------------ */
/* _Pages and Message                                                 */

typedef struct {
	PyObject_HEAD
	ClientObject *client;
	homa_msg m;
} PagesObject;

typedef struct {
	PyObject_HEAD
	ClientObject *client;
	PagesObject *pages; /* NULL once released */
	PyObject *data;     /* the memoryview handed out as data, once asked for */
	PyObject *peer;     /* (ip, port), once asked for */
	homa_msg req;       /* a copy of the message's fields, for homa_reply */
} MessageObject;

static void dealloc_pages(PagesObject *p)
{
	give_back(p->client, &p->m);
	Py_DECREF(p->client);
	PyObject_Free(p);
}

static int pages_getbuffer(PagesObject *p, Py_buffer *view, int flags)
{
	return PyBuffer_FillInfo(view, (PyObject *)p, (void *)p->m.data, (Py_ssize_t)p->m.length, 1, flags);
}

static PyBufferProcs pages_as_buffer = {(getbufferproc)pages_getbuffer, NULL};

static PyTypeObject PagesType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "homa_dpdk._native._Pages",
	.tp_basicsize = sizeof(PagesObject),
	.tp_dealloc = (destructor)dealloc_pages,
	.tp_as_buffer = &pages_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The receive-pool pages of one message (read-only buffer); they go back to the daemon when this "
		  "object dies.",
};

/* A Message of m (REQUEST or RESPONSE), which it now owns. */
static PyObject *new_message(ClientObject *o, homa_msg *m)
{
	PagesObject *p = PyObject_New(PagesObject, &PagesType);
	if (p == NULL) {
		give_back(o, m);
		return NULL;
	}
	Py_INCREF(o);
	p->client = o;
	p->m = *m;
	MessageObject *msg = PyObject_New(MessageObject, &MessageType);
	if (msg == NULL) {
		Py_DECREF(p);
		return NULL;
	}
	Py_INCREF(o);
	msg->client = o;
	msg->pages = p;
	msg->data = NULL;
	msg->peer = NULL;
	msg->req = *m;
	return (PyObject *)msg;
}

/* Drops the message's own hold on its pages: they go back once no buffer
 * made from data is left. */
static void drop_pages(MessageObject *m)
{
	PyObject *d = m->data;
	m->data = NULL;
	if (d != NULL) {
		if (Py_REFCNT(d) > 1) { /* the caller holds data: end it as memoryview.release() does, if it can */
			PyObject *r = PyObject_CallMethod(d, "release", NULL);
			if (r == NULL)
				PyErr_Clear(); /* BufferError: a buffer made from it remains; the pages go back with it */
			Py_XDECREF(r);
		}
		Py_DECREF(d);
	}
	Py_CLEAR(m->pages);
}

static void dealloc_message(MessageObject *m)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	Py_CLEAR(m->data);
	Py_CLEAR(m->pages);
	PyErr_Restore(et, ev, tb);
	Py_CLEAR(m->peer);
	Py_DECREF(m->client);
	PyObject_Free(m);
}

static PyObject *msg_data(MessageObject *m, void *unused)
{
	if (m->pages == NULL) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: the message was released; its data is gone");
		return NULL;
	}
	if (m->data == NULL && (m->data = PyMemoryView_FromObject((PyObject *)m->pages)) == NULL)
		return NULL;
	Py_INCREF(m->data);
	return m->data;
}

static PyObject *msg_peer(MessageObject *m, void *unused)
{
	if (m->peer == NULL && (m->peer = peer_tuple(&m->req.peer)) == NULL)
		return NULL;
	Py_INCREF(m->peer);
	return m->peer;
}

static PyObject *msg_id(MessageObject *m, void *u) { return PyLong_FromUnsignedLongLong(m->req.id); }
static PyObject *msg_port(MessageObject *m, void *u) { return PyLong_FromLong(m->req.port); }
static PyObject *msg_length(MessageObject *m, void *u) { return PyLong_FromUnsignedLong(m->req.length); }
static PyObject *msg_is_request(MessageObject *m, void *u) { return PyBool_FromLong(m->req.kind == HOMA_MSG_REQUEST); }
static PyObject *msg_released(MessageObject *m, void *u) { return PyBool_FromLong(m->pages == NULL); }
static Py_ssize_t msg_len(MessageObject *m) { return (Py_ssize_t)m->req.length; }

static PyObject *msg_tobytes(MessageObject *m, PyObject *unused)
{
	if (m->pages == NULL) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: the message was released; its data is gone");
		return NULL;
	}
	return PyBytes_FromStringAndSize((const char *)m->pages->m.data, (Py_ssize_t)m->req.length);
}

static PyObject *msg_release(MessageObject *m, PyObject *unused)
{
	drop_pages(m);
	Py_RETURN_NONE;
}

static PyObject *msg_enter(PyObject *m, PyObject *unused)
{
	Py_INCREF(m);
	return m;
}

static PyObject *msg_exit(MessageObject *m, PyObject *const *args, Py_ssize_t n)
{
	drop_pages(m);
	Py_RETURN_NONE;
}

static PyObject *msg_repr(MessageObject *m)
{
	PyObject *peer = msg_peer(m, NULL);
	if (peer == NULL)
		return NULL;
	PyObject *r = PyUnicode_FromFormat("<homa_dpdk.Message %s id=%llu peer=%R port=%d len=%lu%s>",
					   m->req.kind == HOMA_MSG_REQUEST ? "request" : "response",
					   (unsigned long long)m->req.id, peer, (int)m->req.port, (unsigned long)m->req.length,
					   m->pages == NULL ? " released" : "");
	Py_DECREF(peer);
	return r;
}

static PyGetSetDef msg_getset[] = {
	{"id", (getter)msg_id, NULL, "The RPC id: odd for a request (the server id), even for a response (the id send returned).", NULL},
	{"peer", (getter)msg_peer, NULL, "(ip str, port) of the other end.", NULL},
	{"port", (getter)msg_port, NULL, "The local port it concerns (the bound port for a request).", NULL},
	{"is_request", (getter)msg_is_request, NULL, "True for a request to a bound port, False for a response.", NULL},
	{"length", (getter)msg_length, NULL, "Bytes of data (also len(msg)).", NULL},
	{"data", (getter)msg_data, NULL,
	 "A read-only memoryview of the message's bytes where the daemon put them, in the receive pool: no copy. "
	 "ValueError once released.", NULL},
	{"released", (getter)msg_released, NULL, "True once release() was called.", NULL},
	{NULL},
};

static PyMethodDef msg_methods[] = {
	{"tobytes", (PyCFunction)msg_tobytes, METH_NOARGS, "A copy of the data as bytes."},
	{"release", (PyCFunction)msg_release, METH_NOARGS,
	 "Give up data. The pages go back to the daemon once no buffer made from data remains. Idempotent."},
	{"__enter__", (PyCFunction)msg_enter, METH_NOARGS, NULL},
	{"__exit__", (PyCFunction)(void (*)(void))msg_exit, METH_FASTCALL, NULL},
	{NULL},
};

static PySequenceMethods msg_as_sequence = {.sq_length = (lenfunc)msg_len};

PyDoc_STRVAR(message_doc,
"A received request or response.\n\n"
"id: the RPC id (odd for a request: the server id; even for a response: the\n"
"client id that send returned). peer: (ip str, port) of the other end. port:\n"
"the local port it concerns (the bound port for a request). is_request.\n"
"length (also len(msg)). data: a read-only memoryview of the message's bytes\n"
"where the daemon put them, in the receive pool -- no copy.\n\n"
"release() (or leaving a with block) gives up data; the pool pages go back\n"
"to the daemon as soon as no buffer made from data is left: at once, or when\n"
"the last numpy array from np.frombuffer(msg.data) or slice of data is gone.\n"
"So such arrays stay valid however long they live, and a Message simply\n"
"dropped returns its pages too.");

static PyTypeObject MessageType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "homa_dpdk.Message",
	.tp_basicsize = sizeof(MessageObject),
	.tp_dealloc = (destructor)dealloc_message,
	.tp_repr = (reprfunc)msg_repr,
	.tp_as_sequence = &msg_as_sequence,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = message_doc,
	.tp_methods = msg_methods,
	.tp_getset = msg_getset,
};

/* ------------------------------------------------------------------ */
/* Buffers to iovecs                                                  */

typedef struct {
	struct iovec iov_stack[IOV_STACK];
	Py_buffer view_stack[IOV_STACK];
	struct iovec *iov;
	Py_buffer *views;
	int n, held;
	size_t total;
} Gather;

static void gather_free(Gather *g)
{
	for (int i = 0; i < g->held; i++)
		PyBuffer_Release(&g->views[i]);
	if (g->iov != g->iov_stack) {
		PyMem_Free(g->iov);
		PyMem_Free(g->views);
	}
	g->held = 0;
}

/* One buffer of obj's bytes into g: straight from the object when it
 * exports contiguous memory (no copy), through client._to_buffer
 * otherwise (a CPU tensor's numpy array; non-contiguous memory copied
 * once). */
static int gather_one(Gather *g, PyObject *obj)
{
	Py_buffer *v = &g->views[g->held];
	if (Py_TYPE(obj) == &MessageType) {
		MessageObject *m = (MessageObject *)obj;
		if (m->pages == NULL) {
			PyErr_SetString(PyExc_ValueError, "homa_dpdk: the message was released; its data is gone");
			return -1;
		}
		obj = (PyObject *)m->pages;
	}
	if (PyObject_GetBuffer(obj, v, PyBUF_SIMPLE) != 0) {
		PyErr_Clear();
		PyObject *b = PyObject_CallOneArg(to_buffer, obj);
		if (b == NULL)
			return -1;
		int rc = PyObject_GetBuffer(b, v, PyBUF_SIMPLE);
		Py_DECREF(b); /* the view holds it */
		if (rc != 0)
			return -1;
	}
	g->held++;
	if (v->len > 0) {
		g->iov[g->n].iov_base = v->buf;
		g->iov[g->n].iov_len = (size_t)v->len;
		g->n++;
		g->total += (size_t)v->len;
	}
	return 0;
}

static int gather(ClientObject *o, Gather *g, PyObject *const *objs, Py_ssize_t n)
{
	g->iov = g->iov_stack;
	g->views = g->view_stack;
	g->n = g->held = 0;
	g->total = 0;
	if (n > IOV_STACK) {
		g->iov = PyMem_Malloc(sizeof(struct iovec) * (size_t)n);
		g->views = PyMem_Malloc(sizeof(Py_buffer) * (size_t)n);
		if (g->iov == NULL || g->views == NULL) {
			PyMem_Free(g->iov);
			PyMem_Free(g->views);
			g->iov = g->iov_stack;
			PyErr_NoMemory();
			return -1;
		}
	}
	for (Py_ssize_t i = 0; i < n; i++)
		if (gather_one(g, objs[i]) != 0)
			goto fail;
	if (g->total == 0) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: a message has at least 1 byte");
		goto fail;
	}
	if (g->total > o->max_message) {
		PyErr_Format(PyExc_ValueError, "homa_dpdk: message of %zu bytes above the largest, %u", g->total,
			     o->max_message);
		goto fail;
	}
	if (g->total > o->arena_size) {
		PyErr_Format(PyExc_ValueError, "homa_dpdk: message of %zu bytes larger than the transmit arena (%llu bytes)",
			     g->total, (unsigned long long)o->arena_size);
		goto fail;
	}
	return 0;
fail:
	gather_free(g);
	return -1;
}

static PyObject *arena_full(ClientObject *o, size_t n)
{
	char sb[32];
	homa_stats s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	CALL_BEGIN(o);
	homa_stats_get(o->c, &s);
	CALL_END(o);
	PyErr_Format(ArenaFull,
		     "homa_dpdk: no %zu free bytes in the transmit arena within %s s (%llu of %llu free, largest block %llu)",
		     n, secs(o->op_timeout, sb, sizeof sb), (unsigned long long)(s.arena_size - s.arena_used),
		     (unsigned long long)s.arena_size, (unsigned long long)s.arena_largest_free);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Client methods                                                     */

/* One optional keyword argument ("timeout") after npos positional ones. */
static int parse_timeout(const char *fn, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, Py_ssize_t npos,
			 PyObject **timeout)
{
	*timeout = Py_None;
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	if (nargs < npos || nargs + nkw > npos + 1) {
		PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments and an optional timeout", fn, npos);
		return -1;
	}
	if (nargs == npos + 1)
		*timeout = args[npos];
	if (nkw == 1) {
		if (!PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0)) ||
		    PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "timeout") != 0) {
			PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", fn,
				     PyTuple_GET_ITEM(kwnames, 0));
			return -1;
		}
		*timeout = args[nargs];
	}
	return 0;
}

/* homa_wait(rpc) (rpc != 0) or homa_receive (rpc == 0) until something
 * comes, the timeout passes (HOMA_ETIMEDOUT) or wake() is called (also
 * HOMA_ETIMEDOUT), in slices (see the file comment). Returns the status,
 * or HOMA_EINVAL - 100 with a Python exception set (a signal handler's). */
#define RAISED (-1000)
static int wait_loop(ClientObject *o, uint64_t rpc, homa_msg *m, int64_t timeout)
{
	int64_t deadline = timeout < 0 ? 0 : now_ns() + timeout;
	for (;;) {
		int64_t t = WAIT_SLICE_NS;
		if (timeout >= 0) {
			int64_t left = deadline - now_ns();
			if (left < t)
				t = left < 0 ? 0 : left;
		}
		int rc;
		CALL_BEGIN(o);
		rc = rpc ? homa_wait(o->c, rpc, m, t) : homa_receive(o->c, m, t);
		CALL_END(o);
		if (rc != HOMA_ETIMEDOUT)
			return rc;
		if (o->woken) {
			o->woken = 0;
			return rc;
		}
		if (timeout >= 0 && now_ns() >= deadline)
			return rc;
		if (PyErr_CheckSignals() != 0)
			return RAISED;
	}
}

/* A FAILED message as its exception. */
static PyObject *raise_failed(homa_msg *m)
{
	char what[96] = "";
	if (m->refused) {
		char ip[64] = "";
		homa_addr_format(&m->peer, ip, sizeof ip);
		snprintf(what, sizeof what, "%s to %s:%u", m->refused == 1 ? "send_async" : "reply_async", ip,
			 (unsigned)m->peer.port);
	}
	return raise_code(m->err, m->id, what, &m->peer);
}

static PyObject *wait_error(ClientObject *o, int rc, const char *what, uint64_t rpc)
{
	if (rc == RAISED)
		return NULL;
	if (rc == HOMA_ECLOSED) {
		PyErr_SetString(HomaError, o->closing ? "homa_dpdk: the client was closed during the wait"
						      : "homa_dpdk: the client is closed");
		return NULL;
	}
	return raise_status(o, rc, rpc, what);
}

PyDoc_STRVAR(receive_doc,
"receive(timeout=None) -> Message\n\n"
"The next request to a bound port, or the next ended client RPC that no\n"
"wait() claimed (its response Message, or its RPCError raised with .rpc_id\n"
"and .peer), or the next reply_async or send_async the daemon refused (its\n"
"RPCError raised, .rpc_id the request's id -- odd -- or 0 for a send, and\n"
".peer), in arrival order. WaitTimeout if none within timeout seconds\n"
"(None: no limit).");

static PyObject *client_receive(ClientObject *o, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *tobj;
	if (parse_timeout("receive", args, nargs, kwnames, 0, &tobj) != 0 || !check_open(o))
		return NULL;
	int64_t t = timeout_ns(tobj);
	if (t == -2)
		return NULL;
	homa_msg m;
	int rc = wait_loop(o, 0, &m, t);
	if (rc == HOMA_ETIMEDOUT) {
		PyErr_Format(WaitTimeout, "homa_dpdk: no message within %S s", tobj);
		return NULL;
	}
	if (rc != 0)
		return wait_error(o, rc, "receive", 0);
	if (m.kind == HOMA_MSG_FAILED) {
		raise_failed(&m);
		give_back(o, &m);
		return NULL;
	}
	return new_message(o, &m);
}

PyDoc_STRVAR(wait_doc,
"wait(rpc_id, timeout=None) -> Message\n\n"
"The response of client RPC rpc_id (a Message), or RPCError if the RPC\n"
"failed; WaitTimeout if timeout seconds pass first (the RPC goes on: wait\n"
"again, or abort it).");

static PyObject *client_wait(ClientObject *o, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *tobj;
	if (parse_timeout("wait", args, nargs, kwnames, 1, &tobj) != 0 || !check_open(o))
		return NULL;
	unsigned long long rpc = PyLong_Check(args[0]) ? PyLong_AsUnsignedLongLong(args[0]) : 0;
	if (PyErr_Occurred())
		PyErr_Clear();
	if (rpc == 0 || rpc == (unsigned long long)-1 || (rpc & 1)) {
		PyObject *e = PyObject_CallFunction(error_for, "iOsO", HOMA_ERR_NO_RPC, args[0], "wait", Py_None);
		if (e != NULL) {
			PyErr_SetObject((PyObject *)Py_TYPE(e), e);
			Py_DECREF(e);
		}
		return NULL;
	}
	int64_t t = timeout_ns(tobj);
	if (t == -2)
		return NULL;
	homa_msg m;
	int rc = wait_loop(o, rpc, &m, t);
	if (rc == 0)
		return new_message(o, &m);
	if (rc == HOMA_ETIMEDOUT) {
		PyErr_Format(WaitTimeout, "homa_dpdk: no response to RPC %llu within %S s", rpc, tobj);
		return NULL;
	}
	if (rc > 0) {
		raise_code(rc, rpc, "", &m.peer);
		give_back(o, &m);
		return NULL;
	}
	return wait_error(o, rc, "wait", rpc);
}

static PyObject *do_send(ClientObject *o, PyObject *addr, PyObject *const *bufs, Py_ssize_t n, unsigned flags)
{
	homa_addr a;
	Gather g;
	if (!check_open(o) || parse_addr(o, addr, &a) != 0 || gather(o, &g, bufs, n) != 0)
		return NULL;
	uint64_t rpc = 0;
	int rc;
	CALL_BEGIN(o);
	rc = homa_send(o->c, &a, g.iov, g.n, 0, flags, &rpc);
	CALL_END(o);
	gather_free(&g);
	if (rc == HOMA_EARENA)
		return arena_full(o, g.total);
	if (rc != 0)
		return raise_status(o, rc, 0, "send");
	if (flags & HOMA_SEND_DETACHED)
		Py_RETURN_NONE;
	return PyLong_FromUnsignedLongLong(rpc);
}

PyDoc_STRVAR(send_doc,
"send(addr, buf) -> rpc_id\n\n"
"Send a request of buf's bytes to addr = (ip str, server port); return the\n"
"RPC id once the daemon accepted it. buf: any buffer (bytes, bytearray,\n"
"memoryview, numpy array, CPU torch tensor), copied into the transmit arena\n"
"once.");

static PyObject *client_send(ClientObject *o, PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs != 2) {
		PyErr_SetString(PyExc_TypeError, "send(addr, buf) takes 2 arguments");
		return NULL;
	}
	return do_send(o, args[0], args + 1, 1, 0);
}

PyDoc_STRVAR(send_async_doc,
"send_async(addr, *bufs)\n\n"
"Send a request of the bytes of bufs, one after the other, to addr = (ip\n"
"str, server port), and return once it is on the submission ring, without\n"
"waiting for the daemon's answer (send waits for it to learn the RPC id).\n"
"Each buffer is copied into the transmit arena once, before it returns: they\n"
"may be reused at once.\n\n"
"The RPC is nobody's to wait() for: its outcome comes back through receive()\n"
"like any unclaimed RPC's, the response a Message whose id is the RPC id, a\n"
"failure an RPCError with .rpc_id and .peer -- the daemon refusing the send\n"
"too (then .rpc_id is 0, and the error a BadEntry for an entry it found bad),\n"
"counted in stats()[\"send_refused\"]. Raised here are only local errors, as\n"
"for reply_async.");

static PyObject *client_send_async(ClientObject *o, PyObject *const *args, Py_ssize_t nargs)
{
	if (nargs < 1) {
		PyErr_SetString(PyExc_TypeError, "send_async(addr, *bufs) needs an address");
		return NULL;
	}
	return do_send(o, args[0], args + 1, nargs - 1, HOMA_SEND_DETACHED);
}

static PyObject *do_reply(ClientObject *o, PyObject *const *args, Py_ssize_t nargs, unsigned flags)
{
	if (nargs != 2) {
		PyErr_SetString(PyExc_TypeError, "reply(msg, buf) takes 2 arguments");
		return NULL;
	}
	MessageObject *req = (MessageObject *)args[0];
	if (Py_TYPE(req) != &MessageType || req->req.kind != HOMA_MSG_REQUEST) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: reply needs a request Message from receive()");
		return NULL;
	}
	if (!check_open(o))
		return NULL;
	if (req->client != o) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: the request came through another Client");
		return NULL;
	}
	Gather g;
	if (gather(o, &g, args + 1, 1) != 0)
		return NULL;
	homa_msg r = req->req;
	int rc;
	CALL_BEGIN(o);
	rc = homa_reply(o->c, &r, g.iov, g.n, flags);
	CALL_END(o);
	gather_free(&g);
	if (rc == 0)
		Py_RETURN_NONE;
	if (rc == HOMA_EARENA)
		return arena_full(o, g.total);
	if (rc == HOMA_EREPLIED) {
		PyErr_Format(HomaError, "homa_dpdk: request %llu was already answered", (unsigned long long)r.id);
		return NULL;
	}
	char what[48];
	snprintf(what, sizeof what, "reply to %llu", (unsigned long long)r.id);
	return raise_status(o, rc, r.id, what);
}

PyDoc_STRVAR(reply_doc,
"reply(msg, buf)\n\n"
"Answer request msg with buf's bytes (any buffer, msg.data too); returns\n"
"once the daemon accepted the reply. A server answers one request per pass\n"
"of the daemon's loop at best this way; see reply_async. A reply too long\n"
"for the client (RPCError PEER_MESSAGE_LENGTH: above 1,000,000 bytes to a\n"
"peer that may run kernel Homa) leaves the request unanswered: reply again,\n"
"shorter.");

static PyObject *client_reply(ClientObject *o, PyObject *const *args, Py_ssize_t nargs)
{
	return do_reply(o, args, nargs, 0);
}

PyDoc_STRVAR(reply_async_doc,
"reply_async(msg, buf)\n\n"
"Answer request msg like reply, but return once the reply is on the\n"
"submission ring, without waiting for the daemon's answer, so a server\n"
"answers a burst of requests within one pass of the daemon's loop instead of\n"
"one pass each. buf is copied before it returns: msg may be released at\n"
"once.\n\n"
"The daemon's answer is read later, by any call that reads completions\n"
"(receive, wait, send, ...): an acceptance counts in stats()[\"replies\"]; a\n"
"refusal (the RPC has ended: its client aborted or timed out) counts in\n"
"\"rpc_errors\" and \"reply_refused\" and comes back through receive() like a\n"
"failed client RPC: an RPCError raised with .rpc_id = msg.id and .peer =\n"
"msg.peer -- the reply is not lost silently. Raised here are only local\n"
"errors: ValueError (not a request of this client, an empty or oversized\n"
"buffer), ArenaFull, HomaError (already answered, the submission ring full\n"
"for op_timeout, the client closed).");

static PyObject *client_reply_async(ClientObject *o, PyObject *const *args, Py_ssize_t nargs)
{
	return do_reply(o, args, nargs, HOMA_REPLY_DETACHED);
}

PyDoc_STRVAR(bind_doc,
"bind(port)\n\n"
"Bind a server port (1..0x7fff) of this worker: requests to it arrive\n"
"through receive().");

static PyObject *client_bind(ClientObject *o, PyObject *port)
{
	long p = -1;
	if (PyLong_Check(port)) {
		int overflow;
		p = PyLong_AsLongAndOverflow(port, &overflow);
		if (overflow)
			p = -1;
	}
	if (p < 1 || p > HOMA_MAX_SERVER_PORT) {
		PyErr_Format(PyExc_ValueError, "homa_dpdk: port %R not in 1..%d", port, HOMA_MAX_SERVER_PORT);
		return NULL;
	}
	if (!check_open(o))
		return NULL;
	int rc;
	CALL_BEGIN(o);
	rc = homa_bind(o->c, (uint16_t)p);
	CALL_END(o);
	if (rc == 0)
		Py_RETURN_NONE;
	char what[24];
	snprintf(what, sizeof what, "bind %ld", p);
	return raise_status(o, rc, 0, what);
}

PyDoc_STRVAR(abort_doc,
"abort(rpc_id) -> bool\n\n"
"End client RPC rpc_id and forget it: a response that still arrives is\n"
"dropped. True if the daemon aborted it, False if it had already ended (its\n"
"unclaimed outcome is dropped too) or is unknown.");

static PyObject *client_abort(ClientObject *o, PyObject *id)
{
	unsigned long long rpc = 0;
	if (PyLong_Check(id) && !PyBool_Check(id)) {
		rpc = PyLong_AsUnsignedLongLong(id);
		if (PyErr_Occurred()) {
			PyErr_Clear();
			rpc = 0;
		}
	}
	if (rpc == 0 || (rpc & 1)) {
		PyErr_Format(PyExc_ValueError, "homa_dpdk: %R is not a client RPC id (even, nonzero)", id);
		return NULL;
	}
	if (!check_open(o))
		return NULL;
	int rc;
	CALL_BEGIN(o);
	rc = homa_abort(o->c, rpc);
	CALL_END(o);
	if (rc == 1)
		Py_RETURN_TRUE;
	if (rc == 0 || rc == HOMA_ENORPC || rc == HOMA_ERR_NO_RPC)
		Py_RETURN_FALSE;
	char what[40];
	snprintf(what, sizeof what, "abort %llu", rpc);
	return raise_status(o, rc, rpc, what);
}

PyDoc_STRVAR(abort_all_doc,
"abort_all()\n\n"
"Abort every client RPC of this worker and drop their outcomes, including\n"
"ended ones nobody claimed yet.");

static PyObject *client_abort_all(ClientObject *o, PyObject *unused)
{
	if (!check_open(o))
		return NULL;
	int rc;
	CALL_BEGIN(o);
	rc = homa_abort_all(o->c);
	CALL_END(o);
	if (rc < 0 || rc > 0)
		return raise_status(o, rc, 0, "abort all");
	Py_RETURN_NONE;
}

PyDoc_STRVAR(wake_doc,
"wake()\n\n"
"Make a wait in progress in another thread (wait, receive, ...) return as\n"
"if its timeout had passed -- or, if none is in progress, the next one,\n"
"once. For a thread that waits on the client by default and must hand it to\n"
"another.");

static PyObject *client_wake(ClientObject *o, PyObject *unused)
{
	if (o->c != NULL && !o->closed) {
		o->woken = 1;
		homa_wake(o->c);
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(close_doc,
"close()\n\n"
"Detach: the daemon ends the session (aborts our RPCs, unbinds our ports,\n"
"frees its side of the region). Messages the caller still holds stay\n"
"readable until released or dropped. From another thread, close()\n"
"interrupts a wait in progress, which raises HomaError.");

static PyObject *client_close(ClientObject *o, PyObject *unused)
{
	close_client(o);
	Py_RETURN_NONE;
}

static const struct {
	const char *name;
	size_t off;
} stat_fields[] = {
#define F(x) {#x, offsetof(homa_stats, x)}
	F(sends), F(send_refused), F(replies), F(reply_refused), F(aborts), F(requests), F(responses), F(rpc_errors),
	F(bad_completions), F(unexpected_completions), F(page_returns), F(page_return_errors), F(spins), F(sleeps),
	F(wakeups), F(arena_waits), F(sq_full_waits), F(sq_corrupt), F(cq_corrupt), F(arena_size), F(arena_used),
	F(arena_ranges), F(arena_largest_free), F(pool_pages), F(pool_pages_held), F(messages_alive),
	F(rpcs_outstanding), F(ready), F(submissions_pending), F(submissions), F(completions),
#undef F
};

PyDoc_STRVAR(stats_doc,
"stats() -> dict\n\n"
"Counters of this session (a new dict), libhoma's homa_stats. First it does\n"
"what can be done without waiting (homa_poll: released pages given back,\n"
"completions read), so pool_pages_held counts the pages of messages still\n"
"alive, not released ones waiting to ride on the next submission.");

static PyObject *client_stats(ClientObject *o, PyObject *unused)
{
	homa_stats s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	if (o->c == NULL) {
		PyErr_SetString(HomaError, "homa_dpdk: the client is closed");
		return NULL;
	}
	int rc;
	int open = !o->closed && !o->closing;
	CALL_BEGIN(o);
	if (open)
		homa_poll(o->c); /* EDEAD, ECLOSED: the counters still tell */
	rc = homa_stats_get(o->c, &s);
	CALL_END(o);
	if (rc < 0)
		return raise_status(o, rc, 0, "stats");
	PyObject *d = PyDict_New();
	if (d == NULL)
		return NULL;
	size_t filled = s.size < sizeof s ? s.size : sizeof s;
	for (size_t i = 0; i < sizeof stat_fields / sizeof stat_fields[0]; i++) {
		if (stat_fields[i].off + sizeof(uint64_t) > filled)
			break;
		uint64_t v;
		memcpy(&v, (char *)&s + stat_fields[i].off, sizeof v);
		PyObject *n = PyLong_FromUnsignedLongLong(v);
		if (n == NULL || PyDict_SetItemString(d, stat_fields[i].name, n) != 0) {
			Py_XDECREF(n);
			Py_DECREF(d);
			return NULL;
		}
		Py_DECREF(n);
	}
	return d;
}

static PyObject *client_layout(ClientObject *o, PyObject *unused)
{
	homa_layout *l = &o->layout;
	if (o->c == NULL) {
		PyErr_SetString(HomaError, "homa_dpdk: the client is not attached");
		return NULL;
	}
	return Py_BuildValue("(KKKKKKKKKI)", (unsigned long long)l->region_size, (unsigned long long)l->sq_offset,
			     (unsigned long long)l->sq_entries, (unsigned long long)l->cq_offset,
			     (unsigned long long)l->cq_entries, (unsigned long long)l->arena_offset,
			     (unsigned long long)l->arena_size, (unsigned long long)l->pool_offset,
			     (unsigned long long)l->pool_pages, (unsigned)l->max_message);
}

static PyObject *client_region(ClientObject *o, PyObject *unused)
{
	size_t size = 0;
	if (o->c == NULL) {
		PyErr_SetString(HomaError, "homa_dpdk: the client is not attached");
		return NULL;
	}
	void *p = homa_region(o->c, &size);
	/* A view of the client's own mapping, for tests and diagnostics only:
	 * valid while the Client object lives (the caller keeps it alive). */
	return PyMemoryView_FromMemory(p, (Py_ssize_t)size, PyBUF_WRITE);
}

static PyObject *client_poll(ClientObject *o, PyObject *unused)
{
	if (!check_open(o))
		return NULL;
	int rc;
	CALL_BEGIN(o);
	rc = homa_poll(o->c);
	CALL_END(o);
	if (rc < 0)
		return raise_status(o, rc, 0, "poll");
	return PyLong_FromLong(rc);
}

PyDoc_STRVAR(fileno_doc, "fileno() -> int\n\nThe wake-up eventfd (readable when the daemon woke a sleeping wait); for diagnostics.");

static PyObject *client_fileno(ClientObject *o, PyObject *unused)
{
	if (o->c == NULL || o->closed) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: the client is closed");
		return NULL;
	}
	return PyLong_FromLong(homa_fd(o->c));
}

static PyObject *client_get_closed(ClientObject *o, void *u) { return PyBool_FromLong(o->c == NULL || o->closed); }
static PyObject *client_get_closing(ClientObject *o, void *u) { return PyBool_FromLong(o->closing); }
static PyObject *client_get_max_message(ClientObject *o, void *u) { return PyLong_FromUnsignedLong(o->max_message); }

static PyObject *client_get_last_bad(ClientObject *o, void *u)
{
	char buf[512] = "";
	if (o->c == NULL)
		return PyUnicode_FromString("");
	CALL_BEGIN(o);
	homa_last_bad(o->c, buf, sizeof buf);
	CALL_END(o);
	return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
}

static PyMethodDef client_methods[] = {
	{"bind", (PyCFunction)client_bind, METH_O, bind_doc},
	{"send", (PyCFunction)(void (*)(void))client_send, METH_FASTCALL, send_doc},
	{"send_async", (PyCFunction)(void (*)(void))client_send_async, METH_FASTCALL, send_async_doc},
	{"wait", (PyCFunction)(void (*)(void))client_wait, METH_FASTCALL | METH_KEYWORDS, wait_doc},
	{"receive", (PyCFunction)(void (*)(void))client_receive, METH_FASTCALL | METH_KEYWORDS, receive_doc},
	{"reply", (PyCFunction)(void (*)(void))client_reply, METH_FASTCALL, reply_doc},
	{"reply_async", (PyCFunction)(void (*)(void))client_reply_async, METH_FASTCALL, reply_async_doc},
	{"abort", (PyCFunction)client_abort, METH_O, abort_doc},
	{"abort_all", (PyCFunction)client_abort_all, METH_NOARGS, abort_all_doc},
	{"wake", (PyCFunction)client_wake, METH_NOARGS, wake_doc},
	{"close", (PyCFunction)client_close, METH_NOARGS, close_doc},
	{"stats", (PyCFunction)client_stats, METH_NOARGS, stats_doc},
	{"fileno", (PyCFunction)client_fileno, METH_NOARGS, fileno_doc},
	{"_layout", (PyCFunction)client_layout, METH_NOARGS, "The region's layout as a tuple of Layout's fields."},
	{"_region", (PyCFunction)client_region, METH_NOARGS,
	 "A writable memoryview of the client's whole mapping of the region (tests, diagnostics)."},
	{"_poll", (PyCFunction)client_poll, METH_NOARGS, "homa_poll: read completions and submit page returns now."},
	{NULL},
};

static PyGetSetDef client_getset[] = {
	{"closed", (getter)client_get_closed, NULL, "True once close() was called.", NULL},
	{"_closing", (getter)client_get_closing, NULL, "True once close() has begun.", NULL},
	{"max_message", (getter)client_get_max_message, NULL,
	 "The largest message this client sends or takes, in bytes: the region's (layout.max_message), or the "
	 "max_message given if smaller. Above 1,000,000 bytes a message goes only to peers the daemon knows to run "
	 "homa-dpdk (RPCError PEER_MESSAGE_LENGTH otherwise).", NULL},
	{"last_bad", (getter)client_get_last_bad, NULL, "What the last bad or unexpected completion was ('' if none).",
	 NULL},
	{NULL},
};

static PyTypeObject ClientType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "homa_dpdk._native.Client",
	.tp_basicsize = sizeof(ClientObject),
	.tp_dealloc = (destructor)dealloc_client,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "libhoma's client; homa_dpdk.Client is the class to use.",
	.tp_methods = client_methods,
	.tp_getset = client_getset,
	.tp_init = (initproc)init_client,
	.tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------ */
/* Module functions                                                   */

static PyObject *mod_init(PyObject *self, PyObject *args)
{
	PyObject *v[9];
	if (!PyArg_ParseTuple(args, "OOOOOOOOO:_init", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]))
		return NULL;
	PyObject **dst[] = {&HomaError, &WaitTimeout, &ArenaFull, &AttachError, &RefusedError, &LayoutError,
			    &UnsupportedPlatform, &error_for, &to_buffer};
	for (int i = 0; i < 9; i++) {
		Py_INCREF(v[i]);
		Py_XSETREF(*dst[i], v[i]);
	}
	Py_RETURN_NONE;
}

static PyObject *mod_layout_parse(PyObject *self, PyObject *obj)
{
	Py_buffer v;
	if (!ready() || PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) != 0)
		return NULL;
	homa_layout l;
	homa_layout_error e;
	memset(&e, 0, sizeof e);
	int rc = homa_layout_parse(v.buf, (size_t)v.len, &l, &e);
	PyBuffer_Release(&v);
	if (rc == HOMA_ELAYOUT) {
		e.field[sizeof e.field - 1] = 0;
		e.reason[sizeof e.reason - 1] = 0;
		PyObject *x = PyObject_CallFunction(LayoutError, "sKs", e.field, (unsigned long long)e.value, e.reason);
		if (x != NULL) {
			PyErr_SetObject(LayoutError, x);
			Py_DECREF(x);
		}
		return NULL;
	}
	if (rc != 0) {
		PyErr_Format(HomaError, "homa_dpdk: parse the header: %s", homa_strerror(rc));
		return NULL;
	}
	return Py_BuildValue("(KKKKKKKKKI)", (unsigned long long)l.region_size, (unsigned long long)l.sq_offset,
			     (unsigned long long)l.sq_entries, (unsigned long long)l.cq_offset,
			     (unsigned long long)l.cq_entries, (unsigned long long)l.arena_offset,
			     (unsigned long long)l.arena_size, (unsigned long long)l.pool_offset,
			     (unsigned long long)l.pool_pages, (unsigned)l.max_message);
}

static PyObject *mod_strerror(PyObject *self, PyObject *arg)
{
	long code = PyLong_AsLong(arg);
	if (code == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(homa_strerror((int)code));
}

static PyMethodDef mod_methods[] = {
	{"_init", mod_init, METH_VARARGS,
	 "_init(HomaError, WaitTimeout, ArenaFull, AttachError, RefusedError, LayoutError, UnsupportedPlatform, "
	 "error_for, to_buffer): what the binding raises and how it makes buffers of other objects."},
	{"layout_parse", mod_layout_parse, METH_O,
	 "layout_parse(buffer) -> tuple: homa_layout_parse of the header at the start of buffer (the Layout "
	 "fields), or LayoutError."},
	{"strerror", mod_strerror, METH_O, "homa_strerror(code): the name of a status or protocol error code."},
	{NULL},
};

static struct PyModuleDef native_module = {
	PyModuleDef_HEAD_INIT, "homa_dpdk._native",
	"The binding over libhoma (native/include/homa.h); used by homa_dpdk.Client.", -1, mod_methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
	if (homa_api_version() != HOMA_API_VERSION) {
		PyErr_Format(PyExc_ImportError, "homa_dpdk: libhoma's API version is %d, this binding's %d",
			     homa_api_version(), HOMA_API_VERSION);
		return NULL;
	}
	if (PyType_Ready(&ClientType) < 0 || PyType_Ready(&MessageType) < 0 || PyType_Ready(&PagesType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&native_module);
	if (m == NULL)
		return NULL;
	Py_INCREF(&ClientType);
	Py_INCREF(&MessageType);
	Py_INCREF(&PagesType);
	if (PyModule_AddObject(m, "Client", (PyObject *)&ClientType) < 0 ||
	    PyModule_AddObject(m, "Message", (PyObject *)&MessageType) < 0 ||
	    PyModule_AddObject(m, "_Pages", (PyObject *)&PagesType) < 0 ||
	    PyModule_AddIntConstant(m, "API_VERSION", HOMA_API_VERSION) < 0 ||
	    PyModule_AddIntConstant(m, "PAGE_SIZE", HOMA_PAGE_SIZE) < 0 ||
	    PyModule_AddIntConstant(m, "MAX_SERVER_PORT", HOMA_MAX_SERVER_PORT) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
