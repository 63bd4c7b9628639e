"""Client: a worker's session with the homa-dpdk daemon (see shm/doc.go).

The session is libhoma's (native/include/homa.h): attaching (the control
socket's greeting, the region's memfd and the wake-up eventfd, the header
checked), the rings, the transmit arena, the receive pool, every
completion validated against the client's own state (a bad or unexpected
one is counted in stats() and skipped, never trusted), and the waits
(spin, then sleep on the eventfd). This module is its Python face: the
_native extension turns buffers into iovecs and statuses into the
exceptions of errors.py.

A Client serialises its calls (libhoma's mutex), so threads may share it,
but a thread blocked in wait()/receive() holds it while it waits and other
threads' calls wait for it: use one Client per thread for concurrency.
close() from another thread interrupts such a wait.
"""

try:
    from . import _native
except ImportError as e:  # a source tree not built yet
    raise ImportError(f"homa_dpdk: its binding over libhoma is not built ({e}); in a source tree run "
                      "`python3 python/_build/homa_build.py --inplace`, or install the package "
                      "(pip install ./python)") from e

from . import errors
from .layout import Layout

__all__ = ["Client", "Message", "DEFAULT_SOCKET"]

DEFAULT_SOCKET = "/run/homa-dpdk/workers.sock"

Message = _native.Message


def _to_buffer(buf):
    """A contiguous buffer of buf's bytes, for an object that exports none
    itself (called by _native only then): a CPU torch tensor's numpy
    array; non-contiguous memory copied once into bytes."""
    try:
        mv = memoryview(buf)
    except TypeError:
        to_numpy = getattr(buf, "numpy", None)  # a CPU torch tensor
        if to_numpy is None:
            raise TypeError(f"homa_dpdk: a message must be a bytes-like object (buffer protocol), "
                            f"not {type(buf).__name__}") from None
        t = buf.detach() if hasattr(buf, "detach") else buf
        mv = memoryview(t.numpy())
    with mv:
        if mv.c_contiguous:
            return mv.cast("B") if mv.format != "B" or mv.ndim != 1 else memoryview(mv)
        return mv.tobytes()  # the one case with an extra copy


_native._init(errors.HomaError, errors.WaitTimeout, errors.ArenaFull, errors.AttachError, errors.RefusedError,
              errors.LayoutError, errors.UnsupportedPlatform, errors._error_for, _to_buffer)


class Client(_native.Client):
    """A worker's session with the daemon.

    Client(path, spin_us): attach to the control socket at path. spin_us:
    how long a wait spins on the completion ring before it sleeps on the
    eventfd. Keyword options: op_timeout (seconds to wait for the
    completion of a submission, for arena space and for ring space; 10),
    max_message (largest message the client lets through, None: the
    region's, from its header -- 1,000,000 bytes unless the daemon is
    configured for longer ones; the daemon enforces its own), max_sleep
    (longest single sleep in seconds before the ring is checked again,
    1.0). Also a context manager that closes on exit.

    Methods (see each one's doc): bind, send, send_async, wait, call,
    receive, reply, reply_async, abort, abort_all, wake, stats, close,
    fileno; properties closed, max_message, layout, last_bad.
    """

    def __init__(self, path=DEFAULT_SOCKET, spin_us=50, *, op_timeout=10.0, max_message=None, max_sleep=1.0):
        super().__init__(path, spin_us, op_timeout=op_timeout, max_message=max_message, max_sleep=max_sleep)
        self.layout = Layout(*self._layout())

    def call(self, addr, buf, timeout=None):
        """send + wait. On WaitTimeout the RPC is aborted before the
        exception propagates."""
        rpc_id = self.send(addr, buf)
        try:
            return self.wait(rpc_id, timeout)
        except errors.WaitTimeout:
            try:
                self.abort(rpc_id)
            except errors.HomaError:
                pass
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
