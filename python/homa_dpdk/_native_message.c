/*
 * _native_message.c: Message and _Pages, a received message and the
 * receive-pool pages under it (memoryviews and numpy arrays made from
 * Message.data hold the _Pages; its dealloc gives the pages back), and the
 * buffers of a send gathered as iovecs without a copy.
 */
#include "_native.h"

#include <string.h>

static void dealloc_pages(PagesObject *p)
{
	hn_give_back(p->client, &p->m);
	Py_DECREF(p->client);
	PyObject_Free(p);
}

static int pages_getbuffer(PagesObject *p, Py_buffer *view, int flags)
{
	return PyBuffer_FillInfo(view, (PyObject *)p, (void *)p->m.data, (Py_ssize_t)p->m.length, 1, flags);
}

static PyBufferProcs pages_as_buffer = {(getbufferproc)pages_getbuffer, NULL};

PyTypeObject hn_PagesType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "homa_dpdk._native._Pages",
	.tp_basicsize = sizeof(PagesObject),
	.tp_dealloc = (destructor)dealloc_pages,
	.tp_as_buffer = &pages_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The receive-pool pages of one message (read-only buffer); they go back to the daemon when this "
		  "object dies.",
};

/* A Message of m (REQUEST or RESPONSE), which it now owns. */
PyObject *hn_new_message(ClientObject *o, homa_msg *m)
{
	PagesObject *p = PyObject_New(PagesObject, &hn_PagesType);
	if (p == NULL) {
		hn_give_back(o, m);
		return NULL;
	}
	Py_INCREF(o);
	p->client = o;
	p->m = *m;
	MessageObject *msg = PyObject_New(MessageObject, &hn_MessageType);
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
	if (m->peer == NULL && (m->peer = hn_peer_tuple(&m->req.peer)) == NULL)
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

PyTypeObject hn_MessageType = {
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


void hn_gather_free(Gather *g)
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
	if (Py_TYPE(obj) == &hn_MessageType) {
		MessageObject *m = (MessageObject *)obj;
		if (m->pages == NULL) {
			PyErr_SetString(PyExc_ValueError, "homa_dpdk: the message was released; its data is gone");
			return -1;
		}
		obj = (PyObject *)m->pages;
	}
	if (PyObject_GetBuffer(obj, v, PyBUF_SIMPLE) != 0) {
		PyErr_Clear();
		PyObject *b = PyObject_CallOneArg(hn_to_buffer, obj);
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

int hn_gather(ClientObject *o, Gather *g, PyObject *const *objs, Py_ssize_t n)
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
	hn_gather_free(g);
	return -1;
}
