"""Client: a worker's session with the homa-dpdk daemon (see shm/doc.go).

Attaching: connect to the daemon's unix control socket; it answers "ok\\n"
with two descriptors (SCM_RIGHTS): the region's memfd and this worker's
non-blocking wake-up eventfd. The region is mapped shared and its header
checked; the connection then stays open, idle, for the session's life
(closing it ends the session: the daemon aborts our RPCs and unbinds our
ports).

Every submission carries a cookie the client chooses (a counter from 1;
page returns use cookies with bit 63 set, which encode the pages, so they
need no bookkeeping). Every completion is validated (parse_completion,
then against the client's own state: cookies, RPC ids, arena ranges held,
pool pages held) and a bad or unexpected one is counted in stats() and
skipped, never trusted.

A Client serialises its public methods with a lock, so threads may share
it, but a thread blocked in wait()/receive() holds the lock while it waits
and other threads' calls wait for it: use one Client per thread for
concurrency. close() from another thread interrupts such a wait.
"""

import collections
import ctypes
import math
import mmap
import operator
import os
import select
import socket
import threading
import time
import weakref

from .arena import Arena
from .entry import (COMP_FLAG_RELEASED, MAX_SERVER_PORT, PAGE_SIZE, CompOp, ErrCode, Limits, Op, Submission,
                    err_name, parse_completion)
from .errors import (ArenaFull, AttachError, BadEntry, HomaError, RefusedError, RPCError, WaitTimeout)
from .layout import parse_header
from .ring import Consumer, Producer, check_platform

__all__ = ["Client", "Message", "DEFAULT_SOCKET"]

DEFAULT_SOCKET = "/run/homa-dpdk/workers.sock"

_RETURN_TAG = 1 << 63  # cookies of ReturnPages: tag | page << 32 | pages
_U32 = 0xFFFFFFFF

_WAITING, _ACCEPTED, _FAILED = 0, 1, 2


def _error_for(code, rpc_id=0, what="", peer=None):
    if 0 < code < 16:
        return BadEntry(code, rpc_id, what, peer)
    return RPCError(code, rpc_id, what, peer)


def _byte_view(buf):
    """A fresh 1-D unsigned-byte memoryview of buf's bytes (ours to
    release). Non-contiguous buffers are copied once into bytes."""
    if isinstance(buf, Message):
        buf = buf.data
    try:
        mv = memoryview(buf)
    except TypeError:
        to_numpy = getattr(buf, "numpy", None)  # a CPU torch tensor
        if to_numpy is None:
            raise TypeError(f"homa_dpdk: a message must be a bytes-like object (buffer protocol), "
                            f"not {type(buf).__name__}") from None
        t = buf.detach() if hasattr(buf, "detach") else buf
        mv = memoryview(t.numpy())
    if mv.format == "B" and mv.ndim == 1 and mv.c_contiguous:
        return mv
    try:
        if not mv.c_contiguous:
            raise ValueError("not C-contiguous")
        out = mv.cast("B")
    except (TypeError, ValueError):
        out = memoryview(mv.tobytes())  # the one case with an extra copy
    mv.release()
    return out


def _parse_addr(addr, server):
    try:
        host, port = addr
    except (TypeError, ValueError):
        raise ValueError(f"homa_dpdk: an address is (ipv4 str, port), got {addr!r}") from None
    try:
        ip = socket.inet_pton(socket.AF_INET, host)
    except (OSError, TypeError):
        raise ValueError(f"homa_dpdk: {host!r} is not an IPv4 address") from None
    if ip == b"\0\0\0\0":
        raise ValueError("homa_dpdk: peer address 0.0.0.0")
    top = MAX_SERVER_PORT if server else 0xFFFF
    try:
        port = operator.index(port)
    except TypeError:
        raise ValueError(f"homa_dpdk: port {port!r} is not an integer") from None
    if not 0 < port <= top:
        raise ValueError(f"homa_dpdk: port {port!r} not in 1..{top}")
    return ip, port


class _Sub:
    """A submission waiting for its completion (and, for Send and Reply,
    an arena range the engine may still read). detached: no call awaits
    the completion (reply_async); the handlers count it or queue the
    refusal."""

    __slots__ = ("kind", "cookie", "state", "err", "off", "length", "port", "rpc_id", "peer", "detached")

    def __init__(self, kind, cookie, off=None, length=0, port=0, rpc_id=0, peer=None, detached=False):
        self.kind = kind
        self.cookie = cookie
        self.state = _WAITING
        self.err = 0
        self.off = off
        self.length = length
        self.port = port
        self.rpc_id = rpc_id
        self.peer = peer
        self.detached = detached


class _RPC:
    """A client RPC: its Send cookie and, once it ended, its outcome (a
    Message or an RPCError)."""

    __slots__ = ("id", "cookie", "peer", "outcome", "claimed", "aborted")

    def __init__(self, rpc_id, cookie, peer):
        self.id = rpc_id
        self.cookie = cookie
        self.peer = peer
        self.outcome = None
        self.claimed = False
        self.aborted = False


class Message:
    """A received request or response.

    id: the RPC id (odd for a request: the server id; even for a
    response: the client id that send returned). peer: (ip str, port) of
    the other end. port: the local port it concerns (the bound port for a
    request). is_request. length (also len(msg)). data: a read-only
    memoryview of the message's bytes where the daemon put them, in the
    receive pool -- no copy.

    release() (or leaving a with block) gives up data; the pool pages go
    back to the daemon (OpReturnPages) as soon as no buffer made from data
    is left: at once, or when the last numpy array from
    np.frombuffer(msg.data) or slice of data is gone. So such arrays stay
    valid however long they live, and a Message simply dropped returns its
    pages too, once garbage-collected.
    """

    __slots__ = ("id", "peer", "port", "is_request", "length", "_data", "_client", "_peer_ip", "_released",
                 "_replied")

    def __init__(self, client, comp, is_request, data):
        self.id = comp.rpc_id
        self.peer = (socket.inet_ntop(socket.AF_INET, comp.peer_ip), comp.peer_port)
        self.port = comp.port
        self.is_request = is_request
        self.length = comp.length
        self._data = data
        self._client = client
        self._peer_ip = comp.peer_ip
        self._released = False
        self._replied = False

    @property
    def data(self):
        if self._released:
            raise ValueError("homa_dpdk: the message was released; its data is gone")
        return self._data

    def tobytes(self):
        """A copy of the data as bytes."""
        return self.data.tobytes()

    def __len__(self):
        return self.length

    @property
    def released(self):
        return self._released

    def release(self):
        """Give up data. The pages go back to the daemon once no buffer
        made from data remains (see the class docstring). Idempotent."""
        if self._drop_view():
            self._client._give_back()

    def _drop_view(self):
        if self._released:
            return False
        self._released = True
        data, self._data = self._data, None
        try:
            data.release()
        except BufferError:
            pass  # something holds a direct export of data: the pages go back when it lets go
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        kind = "request" if self.is_request else "response"
        state = " released" if self._released else ""
        return f"<homa_dpdk.Message {kind} id={self.id} peer={self.peer} port={self.port} len={self.length}{state}>"


def _attach(path, timeout):
    """Connect, read the greeting and the two descriptors, map the region.
    Returns (sock, mm, efd, layout)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    fds = []
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            data, fds, flags, _ = socket.recv_fds(sock, 256, 2)
            while data and not data.endswith(b"\n") and len(data) < 4096 and not fds:
                more = sock.recv(4096)
                if not more:
                    break
                data += more
        except OSError as e:
            raise AttachError(e.errno, f"homa_dpdk: attach to {path}: {e.strerror or e}") from e
        if data == b"refused\n":
            raise RefusedError(f"homa_dpdk: the daemon at {path} refused this process's credentials "
                               f"(uid {os.getuid()}, gid {os.getgid()}): not in its allow-lists")
        if data != b"ok\n":
            text = data.decode("utf-8", "replace").strip() or "connection closed without a greeting"
            raise AttachError(f"homa_dpdk: attach to {path}: the daemon says {text!r}")
        if flags & getattr(socket, "MSG_CTRUNC", 0) or len(fds) != 2:
            raise AttachError(f"homa_dpdk: attach to {path}: got {len(fds)} descriptors, want 2 (region, eventfd)")
        for fd in fds:
            os.set_inheritable(fd, False)
        rfd, efd = fds
        size = os.fstat(rfd).st_size
        if size <= 0:
            raise AttachError(f"homa_dpdk: attach to {path}: the region's memfd is empty")
        try:
            mm = mmap.mmap(rfd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            raise AttachError(e.errno, f"homa_dpdk: map the region: {e.strerror or e}") from e
        os.close(rfd)  # the mapping keeps the memory
        fds = [efd]
        try:
            lay = parse_header(mm)
        except Exception:
            mm.close()
            raise
        os.set_blocking(efd, False)
        sock.setblocking(False)
        return sock, mm, efd, lay
    except BaseException:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        sock.close()
        raise


class Client:
    """A worker's session with the daemon.

    Client(path, spin_us): attach to the control socket at path. spin_us:
    how long a wait spins on the completion ring before it sleeps on the
    eventfd. Keyword options: op_timeout (seconds to wait for the
    completion of a submission, for arena space and for ring space; 10),
    max_message (largest message the client lets through, None: what
    the 32-bit length field and the arena allow; the daemon enforces its
    own), max_sleep (longest single sleep in seconds before the ring is
    checked again, 1.0). Also a context manager that closes on exit.
    """

    def __init__(self, path=DEFAULT_SOCKET, spin_us=50, *, op_timeout=10.0, max_message=None, max_sleep=1.0):
        check_platform()
        self._closed = True  # until everything is set up
        self._lock = threading.RLock()
        self._path = path
        self._spin_ns = max(0, int(spin_us * 1000))
        self._op_timeout = op_timeout
        self._max_sleep_ms = max(1, int(max_sleep * 1000))
        sock, mm, efd, lay = _attach(path, op_timeout)
        self._sock, self._mm, self._efd, self.layout = sock, mm, efd, lay
        self._mv = memoryview(mm)
        try:
            a, b = lay.sq_range()
            self._sq = Producer(self._mv[a:b], lay.sq_entries)
            a, b = lay.cq_range()
            self._cq = Consumer(self._mv[a:b], lay.cq_entries)
            a, b = lay.arena_range()
            self._arena_mv = self._mv[a:b]
        except BaseException:
            self._release_views()
            os.close(efd)
            sock.close()
            raise
        mm_max = _U32 if max_message is None else min(int(max_message), _U32)
        self._limits = Limits(lay.arena_size, lay.pool_pages, mm_max)
        self._arena = Arena(lay.arena_size)
        self._held = bytearray(lay.pool_pages)  # 1: page handed to us and not yet returned
        self._held_count = 0
        self._poller = select.poll()
        self._poller.register(efd, select.POLLIN)
        self._poller.register(sock.fileno(), select.POLLIN)
        self._subs = {}  # cookie -> _Sub
        self._rpcs = {}  # client RPC id -> _RPC
        self._ready = collections.deque()  # Message (requests), _RPC (ended), RPCError (a refused reply_async)
        self._bound = set()
        self._deferred = collections.deque()  # (page, pages) to return
        self._blocks = {}  # id(weakref) -> (weakref to a message's ctypes block, page, pages)
        self._block_types = {}  # pages -> ctypes array type of that many pool pages
        self._flushing = False
        self._next_cookie = 1
        self._dead = None  # why the session ended, if the daemon ended it
        self._closing = False
        self._stats = collections.Counter()
        self.last_bad = ""  # what the last bad or unexpected completion was
        self._handlers = {
            CompOp.ACCEPTED: self._on_accepted,
            CompOp.REQUEST: self._on_request,
            CompOp.RESPONSE: self._on_response,
            CompOp.ERROR: self._on_error,
            CompOp.RELEASED: self._on_released,
        }
        self._closed = False

    # ----- public API -------------------------------------------------

    def bind(self, port):
        """Bind a server port (1..0x7fff) of this worker: requests to it
        arrive through receive()."""
        if not isinstance(port, int) or not 0 < port <= MAX_SERVER_PORT:
            raise ValueError(f"homa_dpdk: port {port!r} not in 1..{MAX_SERVER_PORT}")
        with self._lock:
            self._check_open()
            sub = self._new_sub(Op.BIND, port=port)
            self._submit(sub, Submission(op=Op.BIND, port=port, cookie=sub.cookie))
            self._await(sub, f"bind {port}")
            self._bound.add(port)

    def send(self, addr, buf):
        """Send a request of buf's bytes to addr = (ipv4 str, server port);
        return the RPC id once the daemon accepted it. buf: any buffer
        (bytes, bytearray, memoryview, numpy array, CPU torch tensor),
        copied into the transmit arena once."""
        ip, port = _parse_addr(addr, server=True)
        with self._lock:
            self._check_open()
            off, n = self._stage(buf)
            sub = self._new_sub(Op.SEND, off=off, length=n, peer=(addr[0], port))
            self._submit(sub, Submission(op=Op.SEND, length=n, cookie=sub.cookie, peer_ip=ip, peer_port=port,
                                         offset=off))
            self._await(sub, "send")
            self._stats["sends"] += 1
            return sub.rpc_id

    def wait(self, rpc_id, timeout=None):
        """The response of client RPC rpc_id (a Message), or RPCError if the
        RPC failed; WaitTimeout if timeout seconds pass first (the RPC goes
        on: wait again, or abort it)."""
        with self._lock:
            self._check_open()
            rpc = self._rpcs.get(rpc_id)
            if rpc is None or rpc.claimed:
                raise RPCError(ErrCode.NO_RPC, rpc_id, "wait")
            if rpc.aborted:
                raise RPCError(ErrCode.ABORTED, rpc_id, "wait")
            if not self._wait_for(lambda: rpc.outcome is not None or rpc.aborted, timeout):
                raise WaitTimeout(f"homa_dpdk: no response to RPC {rpc_id} within {timeout} s")
            if rpc.outcome is None:
                raise RPCError(ErrCode.ABORTED, rpc_id, "wait")
            return self._claim(rpc)

    def call(self, addr, buf, timeout=None):
        """send + wait. On WaitTimeout the RPC is aborted before the
        exception propagates."""
        rpc_id = self.send(addr, buf)
        try:
            return self.wait(rpc_id, timeout)
        except WaitTimeout:
            try:
                self.abort(rpc_id)
            except HomaError:
                pass
            raise

    def receive(self, timeout=None):
        """The next request to a bound port, or the next ended client RPC
        that no wait() claimed (its response Message, or its RPCError
        raised with .rpc_id and .peer), or the next reply_async the daemon
        refused (its RPCError raised, .rpc_id the request's id, odd, and
        .peer the request's peer), in arrival order. WaitTimeout if none
        within timeout seconds (None: no limit)."""
        with self._lock:
            self._check_open()
            if not self._wait_for(self._has_ready, timeout):
                raise WaitTimeout(f"homa_dpdk: no message within {timeout} s")
            item = self._ready.popleft()
            if isinstance(item, Message):
                return item
            if isinstance(item, HomaError):
                raise item
            return self._claim(item)

    def reply(self, msg, buf):
        """Answer request msg with buf's bytes (any buffer, msg.data too);
        returns once the daemon accepted the reply. A server answers one
        request per pass of the daemon's loop at best this way; see
        reply_async."""
        with self._lock:
            sub = self._submit_reply(msg, buf, detached=False)
            self._await(sub, f"reply to {msg.id}")
            self._stats["replies"] += 1

    def reply_async(self, msg, buf):
        """Answer request msg like reply, but return once the reply is on
        the submission ring, without waiting for the daemon's answer, so a
        server answers a burst of requests within one pass of the daemon's
        loop instead of one pass each. buf is copied before it returns:
        msg may be released at once.

        The daemon's answer is read later, by any call that reads
        completions (receive, wait, send, ...): an acceptance counts in
        stats()["replies"]; a refusal (the RPC has ended: its client
        aborted or timed out) counts in "rpc_errors" and "reply_refused"
        and comes back through receive() like a failed client RPC: an
        RPCError raised with .rpc_id = msg.id and .peer = msg.peer -- the
        reply is not lost silently. Raised here are only local errors:
        ValueError (not a request of this client, an empty or oversized
        buffer), ArenaFull, HomaError (already answered, the submission
        ring full for op_timeout, the client closed)."""
        with self._lock:
            self._submit_reply(msg, buf, detached=True)

    def _submit_reply(self, msg, buf, detached):
        """Check that msg is an unanswered request of this client, stage buf
        and submit the Reply (the caller holds the lock); return its _Sub.
        A detached one is awaited by no call: the completion handlers count
        it or queue its refusal."""
        if not isinstance(msg, Message) or not msg.is_request:
            raise ValueError("homa_dpdk: reply needs a request Message from receive()")
        self._check_open()
        if msg._replied:
            raise HomaError(f"homa_dpdk: request {msg.id} was already answered")
        if msg._client is not self:
            raise ValueError("homa_dpdk: the request came through another Client")
        off, n = self._stage(buf)
        sub = self._new_sub(Op.REPLY, off=off, length=n, rpc_id=msg.id, peer=msg.peer if detached else None,
                            detached=detached)
        self._submit(sub, Submission(op=Op.REPLY, length=n, cookie=sub.cookie, rpc_id=msg.id,
                                     peer_ip=msg._peer_ip, peer_port=msg.peer[1], offset=off))
        msg._replied = True
        return sub

    def abort(self, rpc_id):
        """End client RPC rpc_id and forget it: a response that still
        arrives is dropped. True if the daemon aborted it, False if it had
        already ended (its unclaimed outcome is dropped too)."""
        if not isinstance(rpc_id, int) or rpc_id <= 0 or rpc_id & 1:
            raise ValueError(f"homa_dpdk: {rpc_id!r} is not a client RPC id (even, nonzero)")
        with self._lock:
            self._check_open()
            rpc = self._rpcs.get(rpc_id)
            if rpc is None or rpc.claimed:
                return False
            if rpc.outcome is not None:
                self._drop(rpc)
                return False
            rpc.aborted = True
            sub = self._new_sub(Op.ABORT, rpc_id=rpc_id)
            self._submit(sub, Submission(op=Op.ABORT, rpc_id=rpc_id, cookie=sub.cookie))
            try:
                self._await(sub, f"abort {rpc_id}")
            except RPCError as e:
                if e.code == ErrCode.NO_RPC:
                    return False
                raise
            self._stats["aborts"] += 1
            return True

    def abort_all(self):
        """Abort every client RPC of this worker and drop their outcomes,
        including ended ones nobody claimed yet."""
        with self._lock:
            self._check_open()
            for rpc in list(self._rpcs.values()):
                if rpc.outcome is not None:
                    self._drop(rpc)
                else:
                    rpc.aborted = True
            sub = self._new_sub(Op.ABORT_ALL)
            self._submit(sub, Submission(op=Op.ABORT_ALL, cookie=sub.cookie))
            self._await(sub, "abort all")
            self._stats["aborts"] += 1

    def stats(self):
        """Counters of this session (a new dict)."""
        with self._lock:
            d = {k: 0 for k in ("sends", "replies", "reply_refused", "aborts", "requests", "responses", "rpc_errors",
                                "bad_completions", "unexpected_completions", "page_returns", "page_return_errors",
                                "spins", "sleeps", "wakeups", "arena_waits", "sq_full_waits")}
            d.update(self._stats)
            if not self._closed:
                d["sq_corrupt"] = self._sq.corrupt
                d["cq_corrupt"] = self._cq.corrupt
            d.update(arena_size=self._arena.size, arena_used=self._arena.used_bytes,
                     arena_ranges=len(self._arena), arena_largest_free=self._arena.largest_free(),
                     pool_pages=self.layout.pool_pages, pool_pages_held=self._held_count,
                     messages_alive=len(self._blocks),
                     rpcs_outstanding=sum(1 for r in self._rpcs.values() if r.outcome is None),
                     ready=sum(1 for x in self._ready if not isinstance(x, _RPC) or not x.claimed),
                     submissions_pending=sum(1 for s in self._subs.values() if s.state == _WAITING))
            return d

    def close(self):
        """Detach: the daemon ends the session (aborts our RPCs, unbinds our
        ports, frees its side of the region). Messages the caller still
        holds stay readable until released or dropped. From another thread,
        close() interrupts a wait in progress, which raises HomaError."""
        if self._closed:
            return
        self._closing = True
        try:
            os.write(self._efd, (1).to_bytes(8, "little"))  # wake a wait of another thread
        except OSError:
            pass
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._poller.unregister(self._efd)
                self._poller.unregister(self._sock.fileno())
            except (KeyError, ValueError, OSError):
                pass
            self._sock.close()
            os.close(self._efd)
            for item in self._ready:
                if isinstance(item, Message):
                    item._drop_view()
                elif isinstance(item, _RPC) and not item.claimed and isinstance(item.outcome, Message):
                    item.outcome._drop_view()
            self._ready.clear()
            self._deferred.clear()
            self._blocks.clear()
            self._release_views()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass

    @property
    def closed(self):
        return self._closed

    def fileno(self):
        """The wake-up eventfd (readable when the daemon woke a sleeping
        wait); for diagnostics."""
        return self._efd

    # ----- internals --------------------------------------------------

    def _release_views(self):
        for name in ("_sq", "_cq"):
            end = getattr(self, name, None)
            if end is not None:
                end.release()
        for name in ("_arena_mv", "_mv"):
            v = getattr(self, name, None)
            if v is not None:
                v.release()
        try:
            self._mm.close()
        except BufferError:
            pass  # the caller still holds message data: unmapped when the last view goes

    def _check_open(self):
        if self._closed:
            raise HomaError("homa_dpdk: the client is closed")
        if self._dead:
            raise HomaError(f"homa_dpdk: the session has ended: {self._dead}")

    def _new_sub(self, kind, **kw):
        cookie = self._next_cookie
        self._next_cookie += 1
        sub = _Sub(kind, cookie, **kw)
        self._subs[cookie] = sub
        return sub

    def _stage(self, buf):
        """Copy buf into a free arena range: (offset, length)."""
        src = _byte_view(buf)
        try:
            n = src.nbytes
            if n == 0:
                raise ValueError("homa_dpdk: a message has at least 1 byte")
            if n > self._limits.max_message:
                raise ValueError(f"homa_dpdk: message of {n} bytes above the largest, {self._limits.max_message}")
            if n > self._arena.size:
                raise ValueError(f"homa_dpdk: message of {n} bytes larger than the transmit arena "
                                 f"({self._arena.size} bytes)")
            off = self._alloc(n)
            try:
                self._arena_mv[off:off + n] = src  # the one copy
            except BaseException:
                self._arena.free(off)
                raise
            return off, n
        finally:
            src.release()

    def _alloc(self, n):
        off = self._arena.alloc(n)
        if off is not None:
            return off
        self._stats["arena_waits"] += 1
        got = []

        def room():
            o = self._arena.alloc(n)
            if o is None:
                return False
            got.append(o)
            return True

        if not self._wait_for(room, self._op_timeout):
            raise ArenaFull(f"homa_dpdk: no {n} free bytes in the transmit arena within {self._op_timeout} s "
                            f"({self._arena.free_bytes()} of {self._arena.size} free, largest block "
                            f"{self._arena.largest_free()})")
        return got[0]

    def _submit(self, sub, entry):
        try:
            self._push(entry.encode())
        except BaseException:
            del self._subs[sub.cookie]
            if sub.off is not None:
                self._arena.free(sub.off)
                sub.off = None
            raise

    def _push(self, slot):
        if self._sq.push(slot):
            return
        self._stats["sq_full_waits"] += 1
        deadline = time.perf_counter_ns() + int(self._op_timeout * 1e9)
        while not self._sq.push(slot):
            self._drain()
            if time.perf_counter_ns() > deadline:
                raise HomaError(f"homa_dpdk: the submission ring stayed full for {self._op_timeout} s: "
                                "the daemon is not reading it")
            time.sleep(50e-6)

    def _await(self, sub, what):
        if not self._wait_for(lambda: sub.state != _WAITING, self._op_timeout):
            raise WaitTimeout(f"homa_dpdk: no completion for {what} within {self._op_timeout} s "
                              "(is the daemon's engine running?)")
        if sub.state == _FAILED:
            raise _error_for(sub.err, sub.rpc_id, what)

    def _has_ready(self):
        r = self._ready
        while r:
            head = r[0]
            if not isinstance(head, _RPC) or not head.claimed:
                return True
            r.popleft()
        return False

    def _claim(self, rpc):
        rpc.claimed = True
        self._rpcs.pop(rpc.id, None)
        out, rpc.outcome = rpc.outcome, None  # a stale entry in _ready must not keep the Message alive
        if isinstance(out, Exception):
            raise out
        return out

    def _drop(self, rpc):
        rpc.claimed = True
        self._rpcs.pop(rpc.id, None)
        out, rpc.outcome = rpc.outcome, None
        if isinstance(out, Message):
            out._drop_view()

    def _wait_for(self, pred, timeout):
        """Process completions until pred() or timeout (None: no limit):
        spin for spin_us, then sleep on the eventfd (doc.go, "Waiting")."""
        deadline = None if timeout is None else time.perf_counter_ns() + max(0, int(timeout * 1e9))
        while True:
            self._flush_returns()
            self._drain()
            if pred():
                return True
            now = time.perf_counter_ns()
            if deadline is not None and now >= deadline:
                return False
            if self._dead:
                raise HomaError(f"homa_dpdk: the session has ended: {self._dead}")
            if self._closing:
                raise HomaError("homa_dpdk: the client was closed during the wait")
            end = now + self._spin_ns
            if deadline is not None and deadline < end:
                end = deadline
            cq = self._cq
            arrived = False
            while time.perf_counter_ns() < end:
                if len(cq):
                    arrived = True
                    break
            if arrived:
                self._stats["spins"] += 1
                continue
            if deadline is not None and time.perf_counter_ns() >= deadline:
                continue  # one last look, then False
            self._sleep(deadline)

    def _sleep(self, deadline):
        cq = self._cq
        if not cq.prepare_sleep():  # flag = 1, fence, recheck the tail
            return
        self._stats["sleeps"] += 1
        events = []
        try:
            if deadline is None:
                ms = self._max_sleep_ms
            else:
                ms = min(self._max_sleep_ms, max(1, math.ceil((deadline - time.perf_counter_ns()) / 1e6)))
            events = self._poller.poll(ms)
            for fd, ev in events:
                if fd == self._efd:
                    try:
                        os.read(self._efd, 8)
                        self._stats["wakeups"] += 1
                    except BlockingIOError:
                        pass
        finally:
            cq.set_waiting(False)
        for fd, ev in events:
            if fd != self._efd:
                self._check_control(ev)

    def _check_control(self, ev):
        try:
            data = self._sock.recv(256)
        except BlockingIOError:
            data = None
        except OSError as e:
            data = b""
            ev = e
        if data == b"" or (data is None and ev & (select.POLLHUP | select.POLLERR)):
            self._dead = "the daemon closed the control connection (it exited, or ended this worker)"
            raise HomaError(f"homa_dpdk: the session has ended: {self._dead}")

    def _drain(self):
        cq = self._cq
        n = 0
        while True:
            slot = cq.pop()
            if slot is None:
                return n
            n += 1
            try:
                self._handle(slot)
            except Exception as e:  # never let a completion crash the worker
                self._bad(f"handler raised {type(e).__name__}: {e}", None)

    def _handle(self, slot):
        c, code = parse_completion(slot, self._limits)
        if code:
            return self._bad(err_name(code), c)
        self._handlers[c.op](c)

    def _bad(self, why, c):
        self._stats["bad_completions"] += 1
        self.last_bad = f"bad completion ({why}): {c!r}"

    def _unexpected(self, why, c):
        self._stats["unexpected_completions"] += 1
        self.last_bad = f"unexpected completion ({why}): {c!r}"

    def _settle(self, sub):
        if sub.state != _WAITING and sub.off is None:
            self._subs.pop(sub.cookie, None)

    def _free_range(self, sub):
        self._arena.free(sub.off)
        sub.off = None

    def _on_accepted(self, c):
        sub = None if c.cookie & _RETURN_TAG else self._subs.get(c.cookie)
        if sub is None or sub.state != _WAITING:
            return self._unexpected("no submission waits for this cookie", c)
        kind = sub.kind
        if kind == Op.BIND:
            if c.port != sub.port:
                return self._bad(f"bind of port {sub.port} accepted for port {c.port}", c)
        elif kind == Op.SEND:
            rid = c.rpc_id
            if rid == 0 or rid & 1 or rid in self._rpcs:
                return self._bad(f"send accepted with RPC id {rid} (want a new even id)", c)
            self._rpcs[rid] = _RPC(rid, c.cookie, sub.peer)
            sub.rpc_id = rid
        elif kind in (Op.REPLY, Op.ABORT):
            if c.rpc_id != sub.rpc_id:
                return self._bad(f"{kind.name.lower()} of RPC {sub.rpc_id} accepted for RPC {c.rpc_id}", c)
        if c.flags & COMP_FLAG_RELEASED and sub.off is not None:
            self._free_range(sub)
        sub.state = _ACCEPTED
        if sub.detached:
            self._stats["replies"] += 1
        self._settle(sub)

    def _on_released(self, c):
        sub = None if c.cookie & _RETURN_TAG else self._subs.get(c.cookie)
        if sub is None or sub.off is None:
            return self._unexpected("no arena range held under this cookie", c)
        if c.offset != sub.off or c.length != sub.length:
            return self._bad(f"released [{c.offset}, +{c.length}) but the message is at [{sub.off}, +{sub.length})",
                             c)
        self._free_range(sub)
        self._settle(sub)

    def _on_error(self, c):
        if c.cookie & _RETURN_TAG:
            self._stats["page_return_errors"] += 1
            self.last_bad = f"page return refused ({err_name(c.err)}): {c!r}"
            return
        sub = self._subs.get(c.cookie)
        if sub is not None and sub.state == _WAITING:
            sub.state = _FAILED
            sub.err = c.err
            if c.flags & COMP_FLAG_RELEASED and sub.off is not None:
                self._free_range(sub)
            self._settle(sub)
            if sub.detached:  # a reply_async refused: its failure goes to receive()
                self._stats["rpc_errors"] += 1
                self._stats["reply_refused"] += 1
                ip, port = sub.peer
                self._ready.append(_error_for(c.err, sub.rpc_id, f"reply_async to {ip}:{port}", sub.peer))
            return
        rpc = self._rpcs.get(c.rpc_id) if c.rpc_id else None
        if rpc is not None and rpc.cookie == c.cookie and rpc.outcome is None and not rpc.claimed:
            if c.flags & COMP_FLAG_RELEASED and sub is not None and sub.off is not None:
                self._free_range(sub)
                self._settle(sub)
            self._stats["rpc_errors"] += 1
            self._finish(rpc, _error_for(c.err, c.rpc_id, peer=rpc.peer))
            return
        self._unexpected("error for no waiting submission or RPC", c)

    def _pages_free(self, c):
        return self._held.find(1, c.page, c.page + c.pages) == -1

    def _refuse_message(self, why, c):
        """A well-formed Request/Response we cannot take: give its pages back
        if they do not overlap pages we hold."""
        self._unexpected(why, c)
        if self._pages_free(c):
            self._mark(c.page, c.pages)
            self._return_later(c.page, c.pages)

    def _mark(self, page, pages):
        self._held[page:page + pages] = b"\x01" * pages
        self._held_count += pages

    def _new_message(self, c, is_request):
        """A Message over pages [c.page, +c.pages). Its data is a view of a
        ctypes array made over those pages: every buffer derived from data
        (slices, np.frombuffer) keeps that array alive, and a weak
        reference to it tells when the last one is gone: then the pages
        are returned."""
        self._mark(c.page, c.pages)
        typ = self._block_types.get(c.pages)
        if typ is None:
            typ = self._block_types[c.pages] = ctypes.c_ubyte * (c.pages * PAGE_SIZE)
        block = typ.from_buffer(self._mm, self.layout.pool_offset + c.page * PAGE_SIZE)
        wr = weakref.ref(block, self._block_gone)
        self._blocks[id(wr)] = (wr, c.page, c.pages)
        with memoryview(block) as mv, mv.cast("B") as b:
            data = b[:c.length].toreadonly()
        return Message(self, c, is_request, data)

    def _block_gone(self, wr):
        """Weakref callback, from whichever thread dropped the last view:
        only queue the return."""
        rec = self._blocks.pop(id(wr), None)
        if rec is not None and not self._closed:
            self._deferred.append((rec[1], rec[2]))

    def _on_request(self, c):
        if c.cookie != 0 or c.rpc_id & 1 == 0 or c.peer_ip == b"\0\0\0\0" or c.peer_port == 0:
            return self._refuse_message("request with a nonzero cookie, an even id or no peer", c)
        if c.port not in self._bound:
            return self._refuse_message(f"request for port {c.port}, which this worker did not bind", c)
        if not self._pages_free(c):
            return self._bad("request in pool pages this worker still holds", c)
        self._stats["requests"] += 1
        self._ready.append(self._new_message(c, True))

    def _on_response(self, c):
        rpc = self._rpcs.get(c.rpc_id)
        if rpc is None or rpc.cookie != c.cookie or rpc.outcome is not None or rpc.claimed:
            return self._refuse_message("response for no outstanding RPC of this cookie", c)
        if not self._pages_free(c):
            return self._bad("response in pool pages this worker still holds", c)
        self._stats["responses"] += 1
        self._finish(rpc, self._new_message(c, False))

    def _finish(self, rpc, outcome):
        if rpc.aborted:
            rpc.outcome = outcome
            self._drop(rpc)
            return
        rpc.outcome = outcome
        self._ready.append(rpc)

    def _return_later(self, page, pages):
        self._deferred.append((page, pages))

    def _give_back(self):
        """After Message.release: return what is queued now, or, if another
        thread holds the client in a wait, wake that wait to do it."""
        if self._closed or self._dead or not self._deferred:
            return
        if self._lock.acquire(blocking=False):
            try:
                if not self._closed:
                    self._flush_returns()
            finally:
                self._lock.release()
        else:
            try:
                os.write(self._efd, (1).to_bytes(8, "little"))
            except OSError:
                pass

    def _flush_returns(self):
        if self._flushing or not self._deferred:
            return
        self._flushing = True
        try:
            while self._deferred:
                page, pages = self._deferred.popleft()
                if self._held.find(0, page, page + pages) != -1:
                    self._stats["bad_returns"] += 1  # not all held: never expected
                    continue
                slot = Submission(op=Op.RETURN_PAGES, cookie=_RETURN_TAG | page << 32 | pages, page=page,
                                  pages=pages).encode()
                try:
                    self._push(slot)
                except BaseException:
                    self._deferred.appendleft((page, pages))
                    raise
                self._held[page:page + pages] = bytes(pages)
                self._held_count -= pages
                self._stats["page_returns"] += 1
        finally:
            self._flushing = False
