/*
 * _native_client.c: Client, a worker's session (homa_client): attach,
 * close, and every call, with the GIL released while libhoma works. Waits
 * run in slices of WAIT_SLICE_NS, so that they see signals
 * (KeyboardInterrupt); wake() is told apart from a slice's end by a flag.
 */
#include "_native.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

/* Gives m's pages back (homa_msg_release never waits for the client's
 * mutex: when another thread holds it, the pages are left for that thread
 * and it is woken to give them back). */
void hn_give_back(ClientObject *o, homa_msg *m)
{
	if (o->c != NULL)
		homa_msg_release(o->c, m);
}

static int init_client(ClientObject *o, PyObject *args, PyObject *kw)
{
	static char *names[] = {"path", "spin_us", "op_timeout", "max_message", "max_sleep", NULL};
	PyObject *path = NULL, *maxmsg = Py_None;
	double spin_us = 50, op_timeout = 10.0, max_sleep = 1.0;
	if (!hn_ready())
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
			PyErr_Format(hn_RefusedError, "homa_dpdk: %s", err[0] ? err : homa_strerror(rc));
		else if (rc == HOMA_ELAYOUT) {
			/* homa_attach says why only as text: "layout Field = value: reason" */
			char field[64] = "header", reason[256] = "";
			unsigned long long value = 0;
			if (sscanf(err, "layout %63s = %llu: %255[^\n]", field, &value, reason) != 3)
				snprintf(reason, sizeof reason, "%s", err);
			PyObject *e = PyObject_CallFunction(hn_LayoutError, "sKs", field, value, reason);
			if (e != NULL) {
				PyErr_SetObject(hn_LayoutError, e);
				Py_DECREF(e);
			}
		} else if (rc == HOMA_EPLATFORM)
			PyErr_Format(hn_UnsupportedPlatform, "homa_dpdk: %s", err[0] ? err : homa_strerror(rc));
		else if (rc == HOMA_ENOMEM)
			PyErr_NoMemory();
		else if (rc == HOMA_EATTACH)
			PyErr_Format(hn_AttachError, "homa_dpdk: %s", err[0] ? err : homa_strerror(rc));
		else
			PyErr_Format(hn_AttachError, "homa_dpdk: attach to %s: %s", p, err[0] ? err : homa_strerror(rc));
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

static PyObject *arena_full(ClientObject *o, size_t n)
{
	char sb[32];
	homa_stats s;
	memset(&s, 0, sizeof s);
	s.size = sizeof s;
	CALL_BEGIN(o);
	homa_stats_get(o->c, &s);
	CALL_END(o);
	PyErr_Format(hn_ArenaFull,
		     "homa_dpdk: no %zu free bytes in the transmit arena within %s s (%llu of %llu free, largest block %llu)",
		     n, hn_secs(o->op_timeout, sb, sizeof sb), (unsigned long long)(s.arena_size - s.arena_used),
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
 * or RAISED with a Python exception set (a signal handler's). */
#define RAISED (-1000)
static int wait_loop(ClientObject *o, uint64_t rpc, homa_msg *m, int64_t timeout)
{
	int64_t deadline = timeout < 0 ? 0 : hn_now_ns() + timeout;
	for (;;) {
		int64_t t = WAIT_SLICE_NS;
		if (timeout >= 0) {
			int64_t left = deadline - hn_now_ns();
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
		if (timeout >= 0 && hn_now_ns() >= deadline)
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
	return hn_raise_code(m->err, m->id, what, &m->peer);
}

static PyObject *wait_error(ClientObject *o, int rc, const char *what, uint64_t rpc)
{
	if (rc == RAISED)
		return NULL;
	if (rc == HOMA_ECLOSED) {
		PyErr_SetString(hn_HomaError, o->closing ? "homa_dpdk: the client was closed during the wait"
						      : "homa_dpdk: the client is closed");
		return NULL;
	}
	return hn_raise_status(o, rc, rpc, what);
}

PyDoc_STRVAR(receive_doc,
"receive(timeout=None) -> Message\n\n"
"The next request to a bound port, or the next ended client RPC that no\n"
"wait() claimed (its response Message, or its RPCError raised with .rpc_id\n"
"and .peer), or the next reply_async or send_async the daemon refused (its\n"
"RPCError raised, .rpc_id the request's id -- odd -- or 0 for a send, and\n"
".peer), in arrival order. hn_WaitTimeout if none within timeout seconds\n"
"(None: no limit).");

static PyObject *client_receive(ClientObject *o, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *tobj;
	if (parse_timeout("receive", args, nargs, kwnames, 0, &tobj) != 0 || !hn_check_open(o))
		return NULL;
	int64_t t = hn_timeout_ns(tobj);
	if (t == -2)
		return NULL;
	homa_msg m;
	int rc = wait_loop(o, 0, &m, t);
	if (rc == HOMA_ETIMEDOUT) {
		PyErr_Format(hn_WaitTimeout, "homa_dpdk: no message within %S s", tobj);
		return NULL;
	}
	if (rc != 0)
		return wait_error(o, rc, "receive", 0);
	if (m.kind == HOMA_MSG_FAILED) {
		raise_failed(&m);
		hn_give_back(o, &m);
		return NULL;
	}
	return hn_new_message(o, &m);
}

PyDoc_STRVAR(wait_doc,
"wait(rpc_id, timeout=None) -> Message\n\n"
"The response of client RPC rpc_id (a Message), or RPCError if the RPC\n"
"failed; hn_WaitTimeout if timeout seconds pass first (the RPC goes on: wait\n"
"again, or abort it).");

static PyObject *client_wait(ClientObject *o, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
	PyObject *tobj;
	if (parse_timeout("wait", args, nargs, kwnames, 1, &tobj) != 0 || !hn_check_open(o))
		return NULL;
	unsigned long long rpc = PyLong_Check(args[0]) ? PyLong_AsUnsignedLongLong(args[0]) : 0;
	if (PyErr_Occurred())
		PyErr_Clear();
	if (rpc == 0 || rpc == (unsigned long long)-1 || (rpc & 1)) {
		PyObject *e = PyObject_CallFunction(hn_error_for, "iOsO", HOMA_ERR_NO_RPC, args[0], "wait", Py_None);
		if (e != NULL) {
			PyErr_SetObject((PyObject *)Py_TYPE(e), e);
			Py_DECREF(e);
		}
		return NULL;
	}
	int64_t t = hn_timeout_ns(tobj);
	if (t == -2)
		return NULL;
	homa_msg m;
	int rc = wait_loop(o, rpc, &m, t);
	if (rc == 0)
		return hn_new_message(o, &m);
	if (rc == HOMA_ETIMEDOUT) {
		PyErr_Format(hn_WaitTimeout, "homa_dpdk: no response to RPC %llu within %S s", rpc, tobj);
		return NULL;
	}
	if (rc > 0) {
		hn_raise_code(rc, rpc, "", &m.peer);
		hn_give_back(o, &m);
		return NULL;
	}
	return wait_error(o, rc, "wait", rpc);
}

static PyObject *do_send(ClientObject *o, PyObject *addr, PyObject *const *bufs, Py_ssize_t n, unsigned flags)
{
	homa_addr a;
	Gather g;
	if (!hn_check_open(o) || parse_addr(o, addr, &a) != 0 || hn_gather(o, &g, bufs, n) != 0)
		return NULL;
	uint64_t rpc = 0;
	int rc;
	CALL_BEGIN(o);
	rc = homa_send(o->c, &a, g.iov, g.n, 0, flags, &rpc);
	CALL_END(o);
	hn_gather_free(&g);
	if (rc == HOMA_EARENA)
		return arena_full(o, g.total);
	if (rc != 0)
		return hn_raise_status(o, rc, 0, "send");
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
	if (Py_TYPE(req) != &hn_MessageType || req->req.kind != HOMA_MSG_REQUEST) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: reply needs a request Message from receive()");
		return NULL;
	}
	if (!hn_check_open(o))
		return NULL;
	if (req->client != o) {
		PyErr_SetString(PyExc_ValueError, "homa_dpdk: the request came through another Client");
		return NULL;
	}
	Gather g;
	if (hn_gather(o, &g, args + 1, 1) != 0)
		return NULL;
	homa_msg r = req->req;
	int rc;
	CALL_BEGIN(o);
	rc = homa_reply(o->c, &r, g.iov, g.n, flags);
	CALL_END(o);
	hn_gather_free(&g);
	if (rc == 0)
		Py_RETURN_NONE;
	if (rc == HOMA_EARENA)
		return arena_full(o, g.total);
	if (rc == HOMA_EREPLIED) {
		PyErr_Format(hn_HomaError, "homa_dpdk: request %llu was already answered", (unsigned long long)r.id);
		return NULL;
	}
	char what[48];
	snprintf(what, sizeof what, "reply to %llu", (unsigned long long)r.id);
	return hn_raise_status(o, rc, r.id, what);
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
"buffer), hn_ArenaFull, hn_HomaError (already answered, the submission ring full\n"
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
	if (!hn_check_open(o))
		return NULL;
	int rc;
	CALL_BEGIN(o);
	rc = homa_bind(o->c, (uint16_t)p);
	CALL_END(o);
	if (rc == 0)
		Py_RETURN_NONE;
	char what[24];
	snprintf(what, sizeof what, "bind %ld", p);
	return hn_raise_status(o, rc, 0, what);
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
	if (!hn_check_open(o))
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
	return hn_raise_status(o, rc, rpc, what);
}

PyDoc_STRVAR(abort_all_doc,
"abort_all()\n\n"
"Abort every client RPC of this worker and drop their outcomes, including\n"
"ended ones nobody claimed yet.");

static PyObject *client_abort_all(ClientObject *o, PyObject *unused)
{
	if (!hn_check_open(o))
		return NULL;
	int rc;
	CALL_BEGIN(o);
	rc = homa_abort_all(o->c);
	CALL_END(o);
	if (rc < 0 || rc > 0)
		return hn_raise_status(o, rc, 0, "abort all");
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
"frees its side of the region); the replies we submitted still go out\n"
"until acked, or for the daemon's workers.linger at most. Messages the caller still holds stay\n"
"readable until released or dropped. From another thread, close()\n"
"interrupts a wait in progress, which raises hn_HomaError.");

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
	F(rpcs_outstanding), F(ready), F(submissions_pending), F(submissions), F(completions), F(doorbells),
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
		PyErr_SetString(hn_HomaError, "homa_dpdk: the client is closed");
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
		return hn_raise_status(o, rc, 0, "stats");
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
		PyErr_SetString(hn_HomaError, "homa_dpdk: the client is not attached");
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
		PyErr_SetString(hn_HomaError, "homa_dpdk: the client is not attached");
		return NULL;
	}
	void *p = homa_region(o->c, &size);
	/* A view of the client's own mapping, for tests and diagnostics only:
	 * valid while the Client object lives (the caller keeps it alive). */
	return PyMemoryView_FromMemory(p, (Py_ssize_t)size, PyBUF_WRITE);
}

static PyObject *client_poll(ClientObject *o, PyObject *unused)
{
	if (!hn_check_open(o))
		return NULL;
	int rc;
	CALL_BEGIN(o);
	rc = homa_poll(o->c);
	CALL_END(o);
	if (rc < 0)
		return hn_raise_status(o, rc, 0, "poll");
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

PyTypeObject hn_ClientType = {
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
