"""The transport of homa_dpdk.torch (see its module doc): a rank's
session with its host, the rendezvous, messages (a header and a part of
a tensor's bytes per Homa RPC), posted receives and their matching, the
progress thread, probes and failures. Transport is a part of
ProcessGroupHoma (torch.py), which calls _start.
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

__all__ = ["Transport"]

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

def _env_int(name, default):
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"homa_dpdk.torch: {name}={v!r} is not an integer") from None


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


# How long the progress thread leaves the client to the caller after a
# call returns, when no receive is posted (see _background).
_GRACE = 0.01


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


class Transport:
    """ProcessGroupHoma's point-to-point machinery."""

    def _start(self, store, rank, size, timeout):
        """Attach to this rank's host, bind a port, publish it in the
        job's store and read every rank's, start the progress thread."""
        self._rank, self._size = rank, size
        self._timeout = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
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
        self._closed = False
        self._failure = None
        self._thread = threading.Thread(target=self._background, name=f"homa-pg-{rank}", daemon=True)
        self._thread.start()

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
