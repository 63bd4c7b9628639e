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
import os
import select
import threading

from .arena import Arena
from .attach import DEFAULT_SOCKET, _attach
from .completions import CompletionHandlers
from .entry import MAX_SERVER_PORT, CompOp, ErrCode, Limits, Op, Submission
from .errors import HomaError, RPCError, WaitTimeout
from .message import Message
from .pending import _RPC, _WAITING
from .pool import PoolPages
from .ring import Consumer, Producer, check_platform
from .submit import Submitter, _parse_addr
from .waiting import Waiter

__all__ = ["Client", "Message", "DEFAULT_SOCKET"]

class Client(Submitter, Waiter, CompletionHandlers, PoolPages):
    """A worker's session with the daemon.

    Client(path, spin_us): attach to the control socket at path. spin_us:
    how long a wait spins on the completion ring before it sleeps on the
    eventfd. Keyword options: op_timeout (seconds to wait for the
    completion of a submission, for arena space and for ring space; 10),
    max_message (largest message the client lets through, None: the
    region's, from its header — 1,000,000 bytes unless the daemon is
    configured for longer ones; the daemon enforces its own), max_sleep (longest single sleep in seconds before the ring is
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
        mm_max = lay.max_message if max_message is None else min(int(max_message), lay.max_message)
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
        self._woken = False  # wake(): the current or next wait returns
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
        ip, ip6, port = _parse_addr(addr, server=True)
        with self._lock:
            self._check_open()
            off, n = self._stage(buf)
            sub = self._new_sub(Op.SEND, off=off, length=n, peer=(addr[0], port))
            self._submit(sub, Submission(op=Op.SEND, length=n, cookie=sub.cookie, peer_ip=ip, peer_port=port,
                                         offset=off, peer_ip6=ip6))
            self._await(sub, "send")
            self._stats["sends"] += 1
            return sub.rpc_id

    def send_async(self, addr, *bufs):
        """Send a request of the bytes of bufs, one after the other, to
        addr = (ipv4 str, server port), and return once it is on the
        submission ring, without waiting for the daemon's answer (send
        waits for it to learn the RPC id). Each buffer is copied into the
        transmit arena once, before it returns: they may be reused at once.

        The RPC is nobody's to wait() for: its outcome comes back through
        receive() like any unclaimed RPC's, the response a Message whose id
        is the RPC id, a failure an RPCError with .rpc_id and .peer -- the
        daemon refusing the send too (then .rpc_id is 0, and the error a
        BadEntry for an entry it found bad), counted in
        stats()["send_refused"]. Raised here are only local errors, as for
        reply_async."""
        ip, ip6, port = _parse_addr(addr, server=True)
        with self._lock:
            self._check_open()
            off, n = self._stage(*bufs)
            sub = self._new_sub(Op.SEND, off=off, length=n, peer=(addr[0], port), detached=True)
            self._submit(sub, Submission(op=Op.SEND, length=n, cookie=sub.cookie, peer_ip=ip, peer_port=port,
                                         offset=off, peer_ip6=ip6))
            self._stats["sends"] += 1

    def wake(self):
        """Make a wait in progress in another thread (wait, receive, ...)
        return as if its timeout had passed -- or, if none is in progress,
        the next one, once. For a thread that waits on the client by
        default and must hand it to another."""
        self._woken = True
        try:
            os.write(self._efd, (1).to_bytes(8, "little"))
        except OSError:
            pass

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
        reply_async. A reply too long for the client (RPCError
        PEER_MESSAGE_LENGTH: above 1,000,000 bytes to a peer that may run
        kernel Homa) leaves the request unanswered: reply again, shorter."""
        with self._lock:
            sub = self._submit_reply(msg, buf, detached=False)
            try:
                self._await(sub, f"reply to {msg.id}")
            except RPCError as e:
                if e.code == ErrCode.PEER_MESSAGE_LENGTH:
                    msg._replied = False  # the daemon keeps the request for a shorter reply
                raise
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
                                     peer_ip=msg._peer_ip, peer_port=msg.peer[1], offset=off,
                                     peer_ip6=msg._peer_ip6))
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
            d = {k: 0 for k in ("sends", "send_refused", "replies", "reply_refused", "aborts", "requests", "responses", "rpc_errors",
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

    @property
    def max_message(self):
        """The largest message this client sends or takes, in bytes: the
        region's (layout.max_message), or the max_message given if smaller.
        Above 1,000,000 bytes a message goes only to peers the daemon knows
        to run homa-dpdk (RPCError PEER_MESSAGE_LENGTH otherwise)."""
        return self._limits.max_message

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
