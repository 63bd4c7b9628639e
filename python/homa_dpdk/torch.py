"""torch.distributed over homa-dpdk: ``import homa_dpdk.torch`` registers the
backend "homa", so that ``dist.init_process_group("homa", ...)`` sends a job's
point-to-point and collective traffic as Homa RPCs through the daemon's
shared-memory workers.

Operations: send, recv (from a rank or from any), isend, irecv (with
tags), barrier, broadcast, all_reduce (SUM, AVG, PRODUCT, MIN, MAX),
reduce, all_gather (and all_gather_into_tensor), gather, scatter,
reduce_scatter, all_to_all (and all_to_all_single), over CPU tensors of
every dtype, contiguous or not. Algorithms: a dissemination barrier, a
binomial-tree broadcast, recursive doubling for all_reduce below
HOMA_DPDK_TORCH_RING_BYTES (1 MiB) in power-of-two groups (reduce to rank
0 and broadcast in others), the ring (reduce-scatter, then all-gather)
from there up.

Each rank attaches to one of the daemon's hosts (``HOMA_DPDK_SOCKET_DIR``,
default ``/run/homa-dpdk/demo``, holds a socket per host, ``<ip>.sock``; rank r
takes the (LOCAL_RANK mod hosts)-th), binds port ``HOMA_DPDK_PORT_BASE`` (1000)
+ rank, and publishes ``ip:port`` in the job's store. A message is a Homa
RPC whose request carries a header (source rank, tag, sequence number,
offset, length) and the bytes, copied once from the tensor into the
transmit arena; the receiver copies them once from the receive pool into
the posted tensor (or, when none is posted yet, keeps a copy: at most
HOMA_DPDK_TORCH_MAX_UNEXPECTED bytes, 2 GiB, past which the group fails)
and answers with a one-byte response. A send is done once its bytes are
in the arena; a failed one (its rank gone) fails the group. Messages of
one (source, tag) stream carry sequence numbers: Homa delivers concurrent
RPCs in any order, the receiver puts them back in order. Tensors go in
parts of HOMA_DPDK_TORCH_PART_BYTES (1 MiB; at most the daemon's largest
message, protocol.max_message, less the header): a receiver's pool then
holds many parts at once, and those of one tensor arrive side by side. Homa gives short messages its high priorities by itself
(unscheduled priorities by message length), so small tensors and the
collectives' control messages go first.

Threads: a collective runs in the caller's thread, which holds the
client and drives progress while it waits; a progress thread answers
and fills posted receives (what the Work of an irecv waits for) while no
call is in, taking over 10 ms after the last call unless a receive is
posted.
"""

import collections
import ipaddress
import os
import struct
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from . import client as _client
from .entry import MAX_SERVER_PORT, ErrCode
from .errors import HomaError, RPCError, WaitTimeout

try:
    from torch._C._distributed_c10d import _create_work_from_future
except ImportError:  # pragma: no cover - newer torch moved it
    from torch.distributed.distributed_c10d import _create_work_from_future  # type: ignore

__all__ = ["ProcessGroupHoma", "BACKEND"]

BACKEND = "homa"

# Header of every message: magic, source rank, tag, sequence number in the
# (source, tag) stream, offset of this part in the tensor's bytes, the
# tensor's length in bytes.
_HDR = struct.Struct("<IIqQQQ")
_MAGIC = 0x484F4D41  # "HOMA"
_PROBE = 0x50524F42  # "PROB": are you there? (answered, then ignored)
_ANY = -1

# A receive that has waited this long probes its source, and again as
# long: a rank that is gone (its port unbound, its host down) fails the
# probe, and so the group, instead of leaving the others waiting until the
# group's timeout.
_PROBE_AFTER = 1.0

_REDUCE = {
    dist.ReduceOp.SUM: lambda a, b: a.add_(b),
    dist.ReduceOp.PRODUCT: lambda a, b: a.mul_(b),
    dist.ReduceOp.MIN: lambda a, b: torch.minimum(a, b, out=a),
    dist.ReduceOp.MAX: lambda a, b: torch.maximum(a, b, out=a),
}


def _env_int(name, default):
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"homa_dpdk.torch: {name}={v!r} is not an integer") from None


def _op_of(opts):
    return getattr(opts, "reduceOp", dist.ReduceOp.SUM)


def _combine(acc, other, op):
    if op == dist.ReduceOp.AVG:
        op = dist.ReduceOp.SUM
    if acc.dtype == torch.bool:
        if op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX):
            return acc.logical_or_(other)
        return acc.logical_and_(other)
    return _REDUCE[op](acc, other)


def _done_work(result):
    fut = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _host_socket(local_rank):
    """The socket of the daemon host that local_rank attaches to, and that
    host's address: the (local_rank mod hosts)-th <ipv4>.sock of
    HOMA_DPDK_SOCKET_DIR, in address order."""
    d = os.environ.get("HOMA_DPDK_SOCKET_DIR", "/run/homa-dpdk/demo")
    hosts = []
    try:
        names = os.listdir(d)
    except OSError as e:
        raise HomaError(f"homa_dpdk.torch: cannot list the daemon's sockets in {d} (HOMA_DPDK_SOCKET_DIR): {e}") from None
    for f in names:
        if f.endswith(".sock"):
            try:
                hosts.append(ipaddress.IPv4Address(f[:-5]))
            except ValueError:
                continue
    if not hosts:
        raise HomaError(f"homa_dpdk.torch: no host sockets (<ip>.sock) in {d} (HOMA_DPDK_SOCKET_DIR)")
    ip = str(sorted(hosts)[local_rank % len(hosts)])
    return os.path.join(d, ip + ".sock"), ip


def _flat_bytes(t):
    """A 1-D uint8 view of contiguous tensor t's memory (no copy)."""
    return t.detach().reshape(-1).view(torch.uint8)


# all_reduce uses the ring (reduce-scatter + all-gather) from this many
# bytes up, recursive doubling below (HOMA_DPDK_TORCH_RING_BYTES).
_RING_BYTES = 1 << 20


# How long the progress thread leaves the client to the caller after a
# call returns, when no receive is posted (see _background).
_GRACE = 0.01


def _collective(method):
    """A collective holds the client for its whole length."""
    def run(self, *args, **kw):
        self._enter()
        try:
            if self._failure is not None:
                raise self._failure
            return method(self, *args, **kw)
        finally:
            self._leave()
    run.__name__, run.__doc__ = method.__name__, method.__doc__
    return run


class _Recv:
    """A posted receive: its stream (src, tag; src _ANY until bound), the
    tensor, the contiguous bytes it is filled through (the tensor's own
    memory, or a staging copy for a non-contiguous one), the sequence
    number once bound, the bytes arrived, its future."""

    __slots__ = ("src", "tag", "tensor", "flat", "stage", "seq", "got", "fut", "posted", "probe_at")

    def __init__(self, src, tag, tensor):
        self.src, self.tag, self.tensor = src, tag, tensor
        self.posted = time.monotonic()
        self.probe_at = self.posted + _PROBE_AFTER
        if tensor.is_contiguous():
            self.stage = None
            self.flat = _flat_bytes(tensor).numpy() if tensor.numel() else None
        else:
            self.stage = torch.empty(tensor.shape, dtype=tensor.dtype)
            self.flat = _flat_bytes(self.stage).numpy()
        self.seq = None
        self.got = 0
        self.fut = torch.futures.Future()

    @property
    def nbytes(self):
        return 0 if self.flat is None else self.flat.nbytes


class ProcessGroupHoma(dist.ProcessGroup):
    """A ProcessGroup whose traffic goes over homa-dpdk (see the module doc)."""

    def __init__(self, store, rank, size, timeout=timedelta(seconds=300)):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._timeout = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
        self._ring_bytes = _env_int("HOMA_DPDK_TORCH_RING_BYTES", _RING_BYTES)
        self._max_early = _env_int("HOMA_DPDK_TORCH_MAX_UNEXPECTED", 1 << 31)
        local = _env_int("LOCAL_RANK", rank)
        path, ip = _host_socket(local)
        self._client = _client.Client(path, spin_us=_env_int("HOMA_DPDK_SPIN_US", 0), op_timeout=self._timeout)
        self._port = self._bind(_env_int("HOMA_DPDK_PORT_BASE", 1000) + rank)
        store.set(f"homa_dpdk/{rank}", f"{ip}:{self._port}".encode())
        self._peers = []
        for r in range(size):
            ip_r, port_r = store.get(f"homa_dpdk/{r}").decode().rsplit(":", 1)
            self._peers.append((ip_r, int(port_r)))
        self._rank_of = {p: r for r, p in enumerate(self._peers)}
        self._chunk = min(self._client.max_message - _HDR.size, max(1, _env_int("HOMA_DPDK_TORCH_PART_BYTES", 1 << 20)))
        self._mu = threading.Lock()     # the client and all state below
        self._cv = threading.Condition(threading.Lock())  # _want: callers waiting for _mu
        self._want = 0
        self._bg_in = False             # the progress thread waits in the client
        self._left_at = 0.0             # when the last caller left
        self._send_seq = collections.defaultdict(int)   # (dst, tag) -> next sequence number
        self._recv_seq = collections.defaultdict(int)   # (src, tag) -> next sequence number not yet posted for
        self._bound = {}                # (src, tag, seq) -> _Recv
        self._any = collections.deque()  # receives from any source, in post order
        self._early = {}                # (src, tag, seq) -> [total, got, [(offset, bytes)]]
        self._early_bytes = 0
        self.stats = collections.Counter()
        self._coll = 0                  # collective number: its tag space
        self._closed = False
        self._failure = None
        self._thread = threading.Thread(target=self._background, name=f"homa-pg-{rank}", daemon=True)
        self._thread.start()
        self._enter()
        try:
            self._barrier_all()
        finally:
            self._leave()

    def _bind(self, port):
        """Binds the first free port from port on (another group of this
        job on the same host may hold it): the port published is the one
        bound, so no rank needs to guess another's."""
        for p in range(port, min(port + 1024, MAX_SERVER_PORT + 1)):
            try:
                self._client.bind(p)
                return p
            except RPCError as e:
                if e.code != ErrCode.PORT_IN_USE:
                    raise
        raise HomaError(f"homa_dpdk.torch: no free server port in {port}..{port + 1023} (HOMA_DPDK_PORT_BASE)")

    def getBackendName(self):
        return BACKEND

    # ------------------------------------------------------- the client's owner

    def _enter(self):
        """Take the client (and the group's state) from the progress
        thread: wake it if it waits in the client."""
        with self._cv:
            self._want += 1
        if self._bg_in:
            self._client.wake()
        self._mu.acquire()

    def _leave(self):
        self._left_at = time.monotonic()
        self._mu.release()
        with self._cv:
            self._want -= 1
            if self._want == 0 and (self._bound or self._any):
                self._cv.notify()  # receives to fill: the progress thread's, now

    def _background(self):
        """Progress while no caller is in: answers requests, fills posted
        receives (what an irecv's Work waits for), notices failures;
        sleeps on the client's eventfd when nothing arrives. While no
        receive is posted it takes over only once the last caller has been
        gone for _GRACE: a job's back-to-back collectives then do not hand
        the client to it and back between each two (two thread wake-ups
        each time); what arrives meanwhile waits in the completion ring."""
        while not self._closed:
            with self._cv:
                while not self._closed:
                    if self._want:
                        self._cv.wait(_GRACE)
                        continue
                    idle = time.monotonic() - self._left_at
                    if idle < _GRACE and not self._bound and not self._any:
                        self._cv.wait(_GRACE - idle)
                        continue
                    break
            if not self._mu.acquire(timeout=0.1):
                continue
            try:
                self._bg_in = True
                if not self._want and not self._closed and self._failure is None:
                    self._progress(0.1)
                    self._check_posted()
            except HomaError as e:
                if self._closed:
                    return
                self._fail(RuntimeError(f"homa_dpdk.torch: rank {self._rank}: {e}"))
            finally:
                self._bg_in = False
                self._mu.release()
            if self._failure is not None:
                return

    # ------------------------------------------------------------ progress

    def _fail(self, err):
        if self._failure is None:
            self._failure = err
        for r in list(self._bound.values()) + list(self._any):
            if not r.fut.done():
                r.fut.set_exception(self._failure)
        self._bound.clear()
        self._any.clear()

    def _progress(self, wait_s):
        """Takes what arrived, waiting up to wait_s for the first: requests
        (data, answered at once), responses (a send done: nothing to do),
        failures (the group's). Call with _mu held. False if nothing
        came."""
        if not self._one(wait_s):
            return False
        while self._one(0):
            pass
        return True

    def _one(self, wait_s):
        c = self._client
        try:
            m = c.receive(timeout=wait_s)
        except WaitTimeout:
            return False
        except HomaError as e:
            if not hasattr(e, "rpc_id"):
                raise  # the session, not a message
            peer = e.peer
            r = self._rank_of.get(tuple(peer)) if peer is not None else None
            who = f"rank {r}" if r is not None else f"{peer}"
            self._fail(RuntimeError(f"homa_dpdk.torch: rank {self._rank}: a message to {who} failed ({e}): "
                                    "is that rank gone?"))
            return True
        with m:
            if m.is_request:
                self._take(m)
                c.reply_async(m, b"\0")
        return True

    def _take(self, m):
        """One arrived message: its part goes straight into the posted
        receive it belongs to, or is kept until one is posted."""
        data = m.data
        if len(data) < _HDR.size:
            self.stats["dropped_short"] += 1
            return
        magic, src, tag, seq, off, total = _HDR.unpack_from(data)
        if magic != _MAGIC:
            if magic != _PROBE:
                self.stats["dropped_magic"] += 1
            return
        if src >= self._size or self._peers[src][0] != m.peer[0]:
            # Not from the host of the rank it names (a request comes from
            # its sender's client port, not the port the rank bound).
            self.stats["dropped_stranger"] += 1
            return
        n = len(data) - _HDR.size
        if off > total or n > total - off:
            self._fail(RuntimeError(f"homa_dpdk.torch: rank {self._rank}: rank {src} sent bytes "
                                    f"[{off}, +{n}) of a {total}-byte tensor"))
            return
        key = (src, tag, seq)
        r = self._bound.get(key)
        if r is None and self._any and seq == self._recv_seq[(src, tag)]:
            r = self._bind_any(src, tag, seq)
        if r is not None:
            self._fill(r, key, off, total, data[_HDR.size:])
            return
        e = self._early.get(key)
        if e is None:
            e = self._early[key] = [total, 0, []]
        if self._early_bytes + n > self._max_early:
            self._fail(RuntimeError(f"homa_dpdk.torch: rank {self._rank}: more than {self._max_early} bytes arrived "
                                    "for receives not yet posted (HOMA_DPDK_TORCH_MAX_UNEXPECTED)"))
            return
        e[1] += n
        e[2].append((off, bytes(data[_HDR.size:])))
        self._early_bytes += n

    def _bind_any(self, src, tag, seq):
        """The oldest receive from any source on tag takes message seq of
        src's stream (the next not yet posted for)."""
        for r in self._any:
            if r.tag == tag:
                self._any.remove(r)
                r.src, r.seq = src, seq
                self._recv_seq[(src, tag)] = seq + 1
                self._bound[(src, tag, seq)] = r
                return r
        return None

    def _fill(self, r, key, off, total, part):
        if total != r.nbytes:
            del self._bound[key]
            r.fut.set_exception(RuntimeError(
                f"homa_dpdk.torch: rank {self._rank}: rank {key[0]} sent {total} bytes for a receive of "
                f"{r.nbytes} (tag {key[1]})"))
            return
        n = len(part)
        if n:
            memoryview(r.flat)[off:off + n] = part
        r.got += n
        if r.got >= total:
            del self._bound[key]
            if r.stage is not None:
                r.tensor.copy_(r.stage)
            r.fut.set_result([r.tensor])

    def _post(self, src, tag, tensor):
        """Posts a receive (call with _mu held): bound to the next message
        of (src, tag) at once, or, from any source, to the first to come;
        parts that came early are copied in."""
        r = _Recv(src, tag, tensor)
        if self._failure is not None:
            r.fut.set_exception(self._failure)
            return r
        if src == _ANY:
            for s in range(self._size):
                if (s, tag, self._recv_seq[(s, tag)]) in self._early:
                    src = s
                    break
            else:
                self._any.append(r)
                return r
            r.src = src
        r.seq = seq = self._recv_seq[(src, tag)]
        self._recv_seq[(src, tag)] = seq + 1
        key = (src, tag, seq)
        self._bound[key] = r
        e = self._early.pop(key, None)
        if e is not None:
            self._early_bytes -= e[1]
            for off, part in e[2]:
                if key not in self._bound:
                    break
                self._fill(r, key, off, e[0], part)
        return r

    def _wait(self, r, what):
        """Drives progress (call with _mu held) until receive r completes,
        or fails: after the group's timeout, or once a probe of its source
        fails."""
        start = time.monotonic()
        deadline, probe_at = start + self._timeout, start + _PROBE_AFTER
        fut = r.fut
        while not fut.done():
            if self._failure is not None:
                raise self._failure
            now = time.monotonic()
            if now > deadline:
                raise RuntimeError(f"homa_dpdk.torch: rank {self._rank}: {what} did not complete within "
                                   f"{self._timeout:.0f} s")
            try:
                if r.src == _ANY:
                    self._progress(deadline - now)
                    continue
                if now > probe_at:
                    self._probe(r.src)
                    probe_at = now + _PROBE_AFTER
                self._progress(min(deadline, probe_at) - now)
            except HomaError as e:  # the session: the daemon stopped, or ended this worker
                self._fail(RuntimeError(f"homa_dpdk.torch: rank {self._rank}: {what}: {e}"))
        return fut.value()

    def _check_posted(self):
        """For receives that nobody's call waits for (an irecv's Work,
        waited for from C++ as well): the group's timeout, and the probe
        of the source, as _wait does for the caller's."""
        if not self._bound and not self._any:
            return
        now = time.monotonic()
        for key, r in list(self._bound.items()) + [(None, r) for r in self._any]:
            if now - r.posted > self._timeout:
                if key is None:
                    self._any.remove(r)
                else:
                    del self._bound[key]
                who = "any rank" if r.src == _ANY else f"rank {r.src}"
                r.fut.set_exception(RuntimeError(f"homa_dpdk.torch: rank {self._rank}: a receive from {who} "
                                                 f"(tag {r.tag}) did not complete within {self._timeout:.0f} s"))
            elif r.src != _ANY and now > r.probe_at:
                r.probe_at = now + _PROBE_AFTER
                self._probe(r.src)

    def _probe(self, dst):
        """Sends dst a probe; its failure (dst's port gone) fails the group
        through _progress."""
        self._client.send_async(self._peers[dst], _HDR.pack(_PROBE, self._rank, 0, 0, 0, 0))

    # -------------------------------------------------------- point to point

    def _send(self, dst, tag, t):
        """Sends tensor t to dst on tag (call with _mu held): its bytes go
        from t's memory into the transmit arena, once, in as many messages
        as they need; the send is done when send_async returns."""
        if self._failure is not None:
            raise self._failure
        if not t.is_contiguous():
            t = t.contiguous()
        seq = self._send_seq[(dst, tag)]
        self._send_seq[(dst, tag)] = seq + 1
        total = t.numel() * t.element_size()
        peer = self._peers[dst]
        try:
            if total == 0:
                self._client.send_async(peer, _HDR.pack(_MAGIC, self._rank, tag, seq, 0, 0))
                return
            flat = _flat_bytes(t).numpy()
            step = self._chunk
            for off in range(0, total, step):
                self._client.send_async(peer, _HDR.pack(_MAGIC, self._rank, tag, seq, off, total),
                                        flat[off:off + step])
        except HomaError as e:  # the session ended, or the arena stayed full for the group's timeout
            self._fail(RuntimeError(f"homa_dpdk.torch: rank {self._rank}: a send to rank {dst}: {e}"))
            raise self._failure from e

    def send(self, tensors, dst, tag=0):
        self._enter()
        try:
            self._send(dst, tag, tensors[0])
        finally:
            self._leave()
        return _done_work(tensors)

    def _recv_work(self, src, tag, tensor):
        self._enter()
        try:
            r = self._post(src, tag, tensor)
        finally:
            self._leave()
        if src == _ANY:
            return _AnySourceWork(self, r)
        return _create_work_from_future(r.fut)

    def recv(self, tensors, src, tag=0):
        return self._recv_work(src, tag, tensors[0])

    def recv_anysource(self, tensors, tag=0):
        return self._recv_work(_ANY, tag, tensors[0])

    # ---------------------------------------------------------- collectives
    #
    # A collective runs in the caller's thread, which holds the client for
    # its whole length (the progress thread stays out) and drives progress
    # while it waits. Its receives are posted before its sends where the
    # algorithm allows, so that what arrives goes straight into place.

    def _tag(self):
        # Collectives run in the same order on every rank: each gets its
        # own (negative) tag, apart from the application's.
        self._coll += 1
        return -self._coll

    def _xrecv(self, src, tag, t):
        return self._wait(self._post(src, tag, t), f"a receive from rank {src}")

    def _barrier_all(self):
        tag = self._tag()
        one = torch.zeros(1, dtype=torch.uint8)
        # Dissemination barrier: log2(n) rounds.
        k = 1
        while k < self._size:
            r = self._post((self._rank - k) % self._size, tag, torch.zeros(1, dtype=torch.uint8))
            self._send((self._rank + k) % self._size, tag, one)
            self._wait(r, f"the barrier's receive from rank {r.src}")
            k *= 2

    @_collective
    def barrier(self, opts=None):
        self._barrier_all()
        return _done_work([torch.zeros(1)])

    def _bcast(self, t, root, tag):
        # Binomial tree from the root.
        rel = (self._rank - root) % self._size
        mask = 1
        while mask < self._size:
            if rel & mask:
                self._xrecv((self._rank - mask) % self._size, tag, t)
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < self._size:
                self._send((self._rank + mask) % self._size, tag, t)
            mask >>= 1

    @_collective
    def broadcast(self, tensors, opts):
        self._bcast(tensors[0], opts.rootRank, self._tag())
        return _done_work(tensors)

    @_collective
    def allreduce(self, tensors, opts=None):
        t = tensors[0]
        op = _op_of(opts)
        acc = t.reshape(-1).clone()
        tag = self._tag()
        n = self._size
        if n > 1:
            if acc.numel() >= n and acc.numel() * acc.element_size() >= self._ring_bytes:
                self._ring_allreduce(acc, op, tag)
            elif n & (n - 1) == 0:
                self._doubling_allreduce(acc, op, tag)
            else:
                acc = self._reduce_to(0, acc, op, tag)
                self._bcast(acc, 0, tag)
        if op == dist.ReduceOp.AVG:
            acc = _average(acc, n)
        t.copy_(acc.view(t.shape))
        return _done_work(tensors)

    def _doubling_allreduce(self, acc, op, tag):
        """Recursive doubling (a power-of-two group): log2(n) exchanges of
        the whole tensor, the latency-optimal one for small tensors."""
        k = 1
        tmp = torch.empty_like(acc)
        while k < self._size:
            peer = self._rank ^ k
            r = self._post(peer, tag, tmp)
            self._send(peer, tag, acc)
            self._wait(r, f"all_reduce's exchange with rank {peer}")
            # Combine in rank order so that every rank gets the same bits.
            if peer < self._rank:
                acc.copy_(_combine(tmp, acc, op))
            else:
                _combine(acc, tmp, op)
            k *= 2

    def _ring_allreduce(self, acc, op, tag):
        """Ring reduce-scatter then ring all-gather: each rank sends and
        receives 2(n-1)/n of the tensor, the bandwidth-optimal one for
        large tensors. Segment i ends up reduced on rank i-1 (mod n) and
        is passed on from there, so every rank gets the same bits."""
        n, me = self._size, self._rank
        right, left = (me + 1) % n, (me - 1) % n
        segs = list(acc.tensor_split(n))
        tmp = torch.empty_like(segs[0])
        for step in range(n - 1):  # reduce-scatter
            s_out, s_in = (me - step) % n, (me - step - 1) % n
            buf = tmp[:segs[s_in].numel()]
            r = self._post(left, tag, buf)
            self._send(right, tag, segs[s_out])
            self._wait(r, f"all_reduce's ring receive from rank {left}")
            _combine(segs[s_in], buf, op)
        for step in range(n - 1):  # all-gather
            s_out, s_in = (me + 1 - step) % n, (me - step) % n
            r = self._post(left, tag, segs[s_in])
            self._send(right, tag, segs[s_out])
            self._wait(r, f"all_reduce's ring receive from rank {left}")

    def _reduce_to(self, root, acc, op, tag):
        if self._rank == root:
            others = [r for r in range(self._size) if r != root]
            recvs = [self._post(r, tag, torch.empty_like(acc)) for r in others]
            for r in recvs:  # rank order: every run adds alike
                _combine(acc, self._wait(r, f"a reduce's receive from rank {r.src}")[0], op)
        else:
            self._send(root, tag, acc)
        return acc

    @_collective
    def reduce(self, tensors, opts):
        t = tensors[0]
        op = _op_of(opts)
        acc = self._reduce_to(opts.rootRank, t.reshape(-1).clone(), op, self._tag())
        if self._rank == opts.rootRank:
            if op == dist.ReduceOp.AVG:
                acc = _average(acc, self._size)
            t.copy_(acc.view(t.shape))
        return _done_work(tensors)

    def _exchange(self, tag, outs, ins):
        """Every rank sends ins[r] to rank r and receives outs[r] from it
        (None: nothing that way); its own ins goes to its own outs."""
        me = self._rank
        recvs = [self._post(r, tag, outs[r]) for r in range(self._size) if r != me and outs[r] is not None]
        for k in range(1, self._size):  # staggered: rank r sends to r+1 first
            r = (me + k) % self._size
            if ins[r] is not None:
                self._send(r, tag, ins[r])
        if outs[me] is not None and ins[me] is not None:
            outs[me].copy_(ins[me])
        for r in recvs:
            self._wait(r, f"a receive from rank {r.src}")

    @_collective
    def allgather(self, output_lists, inputs, opts=None):
        inp = inputs[0]
        self._exchange(self._tag(), output_lists[0], [inp] * self._size)
        return _done_work(output_lists)

    def _allgather_base(self, output, inp, opts=None):
        outs = list(output.view(self._size, -1).unbind(0))
        self.allgather([outs], [inp.reshape(-1)])
        return _done_work([output])

    @_collective
    def gather(self, output_lists, inputs, opts):
        root, inp = opts.rootRank, inputs[0]
        n = self._size
        if self._rank == root:
            self._exchange(self._tag(), output_lists[0], [inp if r == root else None for r in range(n)])
        else:
            self._exchange(self._tag(), [None] * n, [inp if r == root else None for r in range(n)])
        return _done_work(output_lists)

    @_collective
    def scatter(self, outputs, input_lists, opts):
        root, out = opts.rootRank, outputs[0]
        n = self._size
        if self._rank == root:
            self._exchange(self._tag(), [out if r == root else None for r in range(n)], input_lists[0])
        else:
            self._exchange(self._tag(), [out if r == root else None for r in range(n)], [None] * n)
        return _done_work(outputs)

    @_collective
    def reduce_scatter(self, outputs, input_lists, opts):
        out, ins = outputs[0], input_lists[0]
        op = _op_of(opts)
        n, me = self._size, self._rank
        parts = [torch.empty_like(ins[me]) if r != me else ins[me] for r in range(n)]
        self._exchange(self._tag(), [p if r != me else None for r, p in enumerate(parts)],
                       [x if r != me else None for r, x in enumerate(ins)])
        total = parts[0].clone()
        for r in range(1, n):  # rank order: every rank adds alike
            _combine(total, parts[r], op)
        if op == dist.ReduceOp.AVG:
            total = _average(total, n)
        out.copy_(total.view(out.shape))
        return _done_work(outputs)

    def _reduce_scatter_base(self, output, inp, opts=None):
        """reduce_scatter_tensor: rank r gets the reduction of every rank's
        r-th slice of inp."""
        ins = list(inp.reshape(self._size, -1).unbind(0))
        self.reduce_scatter([output.reshape(-1)], [ins], opts)
        return _done_work([output])

    @_collective
    def alltoall(self, outputs, inputs, opts=None):
        self._exchange(self._tag(), outputs, inputs)
        return _done_work(outputs)

    def alltoall_base(self, output, inp, output_split_sizes, input_split_sizes, opts=None):
        n = self._size
        ins = list(torch.split(inp, list(input_split_sizes) or inp.shape[0] // n))
        outs = list(torch.split(output, list(output_split_sizes) or output.shape[0] // n))
        self.alltoall(outs, ins)
        return _done_work([output])

    # Newer torch dispatches these under other names.
    all_gather_single = _allgather_base
    reduce_scatter_single = _reduce_scatter_base
    all_to_all_single = alltoall_base

    # ------------------------------------------------------------ lifetime

    def close(self):
        self._closed = True
        self._client.wake()
        self._thread.join(timeout=1)
        self._client.close()


class _AnySourceWork(dist.Work):
    """The Work of a receive from any source: dist.recv asks it for the
    rank that sent (the Work from a future cannot say). Only Python holds
    it (dist.recv waits on it), so a Python Work is safe here."""

    def __init__(self, pg, r):
        super().__init__()
        self._r = r

    def wait(self, timeout=None):
        self._r.fut.wait()
        return True

    def is_completed(self):
        return self._r.fut.done()

    def is_success(self):
        return self._r.fut.done()

    def _source_rank(self):
        return self._r.src

    def result(self):
        return [self._r.tensor]

    def get_future(self):
        return self._r.fut


def _average(acc, n):
    if acc.is_floating_point() or acc.is_complex():
        return acc.div_(n)
    return acc.div_(n, rounding_mode="floor")


def _create(store, rank, size, timeout):
    return ProcessGroupHoma(store, rank, size, timeout)


try:  # torch 2.x: say the backend is for CPU tensors (else it assumes cpu and cuda, and warns)
    dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
except TypeError:  # torch 1.13: no devices
    dist.Backend.register_backend(BACKEND, _create)
