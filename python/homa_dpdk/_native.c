/*
 * _native.c: the module homa_dpdk._native (see _native.h for its files):
 * _init, layout_parse, strerror, the exceptions the binding raises and
 * libhoma's statuses mapped to them.
 */
#include "_native.h"

#include <string.h>
#include <time.h>

PyObject *hn_HomaError, *hn_WaitTimeout, *hn_ArenaFull, *hn_AttachError, *hn_RefusedError, *hn_LayoutError,
	*hn_UnsupportedPlatform;
PyObject *hn_error_for; /* errors._error_for(code, rpc_id, what, peer) */
PyObject *hn_to_buffer; /* client._to_buffer(obj): a contiguous buffer of obj's bytes, or TypeError */

int hn_ready(void)
{
	if (hn_HomaError == NULL) {
		PyErr_SetString(PyExc_RuntimeError, "homa_dpdk._native: _init was not called");
		return 0;
	}
	return 1;
}

int64_t hn_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Seconds as Python's repr of a float writes them ("10.0"), into buf. */
const char *hn_secs(double s, char *buf, size_t len)
{
	char *t = PyOS_double_to_string(s, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
	snprintf(buf, len, "%s", t ? t : "?");
	PyMem_Free(t);
	return buf;
}

PyObject *hn_ended_error(void)
{
	PyErr_SetString(hn_HomaError, "homa_dpdk: the session has ended: the daemon closed the control connection "
				   "(it exited, or ended this worker)");
	return NULL;
}

int hn_check_open(ClientObject *o)
{
	if (!hn_ready())
		return 0;
	if (o->c == NULL || o->closed || o->closing) {
		PyErr_SetString(hn_HomaError, "homa_dpdk: the client is closed");
		return 0;
	}
	return 1;
}

PyObject *hn_peer_tuple(const homa_addr *a)
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
PyObject *hn_raise_code(int code, uint64_t rpc_id, const char *what, const homa_addr *peer)
{
	PyObject *p = peer ? hn_peer_tuple(peer) : (Py_INCREF(Py_None), Py_None);
	if (p == NULL)
		return NULL;
	PyObject *e = PyObject_CallFunction(hn_error_for, "iKsO", code, (unsigned long long)rpc_id, what ? what : "", p);
	Py_DECREF(p);
	if (e != NULL) {
		PyErr_SetObject((PyObject *)Py_TYPE(e), e);
		Py_DECREF(e);
	}
	return NULL;
}

/* Raises the exception of status rc of a submission described by what. */
PyObject *hn_raise_status(ClientObject *o, int rc, uint64_t rpc_id, const char *what)
{
	char sb[32];
	if (rc > 0)
		return hn_raise_code(rc, rpc_id, what, NULL);
	switch (rc) {
	case HOMA_ETIMEDOUT:
		PyErr_Format(hn_WaitTimeout, "homa_dpdk: no completion for %s within %s s (is the daemon's engine running?)",
			     what, hn_secs(o->op_timeout, sb, sizeof sb));
		return NULL;
	case HOMA_EDEAD:
		return hn_ended_error();
	case HOMA_ECLOSED:
		PyErr_SetString(hn_HomaError, "homa_dpdk: the client is closed");
		return NULL;
	case HOMA_ESQFULL:
		PyErr_Format(hn_HomaError, "homa_dpdk: the submission ring stayed full for %s s: the daemon is not reading it",
			     hn_secs(o->op_timeout, sb, sizeof sb));
		return NULL;
	case HOMA_ENORPC:
		return hn_raise_code(HOMA_ERR_NO_RPC, rpc_id, what, NULL);
	case HOMA_ENOMEM:
		return PyErr_NoMemory();
	case HOMA_EINVAL:
		PyErr_Format(PyExc_ValueError, "homa_dpdk: %s: %s", what, homa_strerror(rc));
		return NULL;
	default:
		PyErr_Format(hn_HomaError, "homa_dpdk: %s: %s", what, homa_strerror(rc));
		return NULL;
	}
}

/* Seconds (None: no limit) as nanoseconds (-1: no limit); -2 on error. */
int64_t hn_timeout_ns(PyObject *t)
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

/* ------------------------------------------------------------------ */
/* Module functions                                                   */

static PyObject *mod_init(PyObject *self, PyObject *args)
{
	PyObject *v[9];
	if (!PyArg_ParseTuple(args, "OOOOOOOOO:_init", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]))
		return NULL;
	PyObject **dst[] = {&hn_HomaError, &hn_WaitTimeout, &hn_ArenaFull, &hn_AttachError, &hn_RefusedError, &hn_LayoutError,
			    &hn_UnsupportedPlatform, &hn_error_for, &hn_to_buffer};
	for (int i = 0; i < 9; i++) {
		Py_INCREF(v[i]);
		Py_XSETREF(*dst[i], v[i]);
	}
	Py_RETURN_NONE;
}

static PyObject *mod_layout_parse(PyObject *self, PyObject *obj)
{
	Py_buffer v;
	if (!hn_ready() || PyObject_GetBuffer(obj, &v, PyBUF_SIMPLE) != 0)
		return NULL;
	homa_layout l;
	homa_layout_error e;
	memset(&e, 0, sizeof e);
	int rc = homa_layout_parse(v.buf, (size_t)v.len, &l, &e);
	PyBuffer_Release(&v);
	if (rc == HOMA_ELAYOUT) {
		e.field[sizeof e.field - 1] = 0;
		e.reason[sizeof e.reason - 1] = 0;
		PyObject *x = PyObject_CallFunction(hn_LayoutError, "sKs", e.field, (unsigned long long)e.value, e.reason);
		if (x != NULL) {
			PyErr_SetObject(hn_LayoutError, x);
			Py_DECREF(x);
		}
		return NULL;
	}
	if (rc != 0) {
		PyErr_Format(hn_HomaError, "homa_dpdk: parse the header: %s", homa_strerror(rc));
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
	 "_init(hn_HomaError, hn_WaitTimeout, hn_ArenaFull, hn_AttachError, hn_RefusedError, hn_LayoutError, hn_UnsupportedPlatform, "
	 "hn_error_for, hn_to_buffer): what the binding raises and how it makes buffers of other objects."},
	{"layout_parse", mod_layout_parse, METH_O,
	 "layout_parse(buffer) -> tuple: homa_layout_parse of the header at the start of buffer (the Layout "
	 "fields), or hn_LayoutError."},
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
	if (PyType_Ready(&hn_ClientType) < 0 || PyType_Ready(&hn_MessageType) < 0 || PyType_Ready(&hn_PagesType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&native_module);
	if (m == NULL)
		return NULL;
	Py_INCREF(&hn_ClientType);
	Py_INCREF(&hn_MessageType);
	Py_INCREF(&hn_PagesType);
	if (PyModule_AddObject(m, "Client", (PyObject *)&hn_ClientType) < 0 ||
	    PyModule_AddObject(m, "Message", (PyObject *)&hn_MessageType) < 0 ||
	    PyModule_AddObject(m, "_Pages", (PyObject *)&hn_PagesType) < 0 ||
	    PyModule_AddIntConstant(m, "API_VERSION", HOMA_API_VERSION) < 0 ||
	    PyModule_AddIntConstant(m, "PAGE_SIZE", HOMA_PAGE_SIZE) < 0 ||
	    PyModule_AddIntConstant(m, "MAX_SERVER_PORT", HOMA_MAX_SERVER_PORT) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
