"""torch.distributed over homa-dpdk: ``import homa_dpdk.torch`` registers the
backend "homa", so that ``dist.init_process_group("homa", ...)`` sends a job's
point-to-point and collective traffic as Homa RPCs through the daemon's
shared-memory workers.

Work in progress: point-to-point (send, recv, isend, irecv, with
tags), barrier, broadcast, all_reduce, reduce, all_gather (and
all_gather_into_tensor), gather, scatter, reduce_scatter, all_to_all (and
all_to_all_single) are here, over CPU tensors of every dtype; bandwidth-
optimal algorithms for large tensors and errors within the group's timeout
when a rank dies are not yet.

Each rank attaches to one of the daemon's hosts (``HOMA_DPDK_SOCKET_DIR``,
default ``/run/homa-dpdk/demo``, holds a socket per host, ``<ip>.sock``; rank r
takes the (LOCAL_RANK mod hosts)-th), binds port ``HOMA_DPDK_PORT_BASE`` (1000)
+ rank, and publishes ``ip:port`` in the job's store. A message is a Homa
RPC whose request carries a header and the bytes; the receiver answers with an
empty response once it holds them, which completes the send. Messages of one
(source, tag) stream carry sequence numbers: Homa delivers concurrent RPCs in
any order, the receiver puts them back in order. Tensors longer than a message
go in chunks.
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
from .errors import HomaError, RPCError, WaitTimeout

try:
    from torch._C._distributed_c10d import _create_work_from_future
except ImportError:  # pragma: no cover - newer torch moved it
    from torch.distributed.distributed_c10d import _create_work_from_future  # type: ignore

__all__ = ["ProcessGroupHoma", "BACKEND"]

BACKEND = "homa"

# Header of every message: magic, source rank, tag, sequence number in the
# (source, tag) stream, chunk index, chunk count.
_HDR = struct.Struct("<IIqQII")
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
    for f in os.listdir(d):
        if f.endswith(".sock"):
            try:
                hosts.append(ipaddress.IPv4Address(f[:-5]))
            except ValueError:
                continue
    if not hosts:
        raise HomaError(f"homa_dpdk.torch: no host sockets (<ip>.sock) in {d} (HOMA_DPDK_SOCKET_DIR)")
    ip = str(sorted(hosts)[local_rank % len(hosts)])
    return os.path.join(d, ip + ".sock"), ip


class ProcessGroupHoma(dist.ProcessGroup):
    """A ProcessGroup whose traffic goes over homa-dpdk (see the module doc)."""

    def __init__(self, store, rank, size, timeout=timedelta(seconds=300)):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._timeout = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
        local = int(os.environ.get("LOCAL_RANK", rank))
        path, ip = _host_socket(local)
        self._client = _client.Client(path, spin_us=int(os.environ.get("HOMA_DPDK_SPIN_US", "0")), op_timeout=self._timeout)
        self._port = int(os.environ.get("HOMA_DPDK_PORT_BASE", "1000")) + rank
        self._client.bind(self._port)
        store.set(f"homa_dpdk/{rank}", f"{ip}:{self._port}".encode())
        self._peers = []
        for r in range(size):
            ip_r, port_r = store.get(f"homa_dpdk/{r}").decode().rsplit(":", 1)
            self._peers.append((ip_r, int(port_r)))
        self._chunk = self._client.max_message - _HDR.size
        self._mu = threading.RLock()
        self._send_seq = collections.defaultdict(int)   # (dst, tag) -> next sequence number
        self._recv_seq = collections.defaultdict(int)   # (src, tag) -> next expected
        self._early = {}                                # (src, tag, seq, chunk) -> bytes
        self._sends = {}                                # rpc_id -> Future (None: part of a larger send)
        self._pending = collections.deque()             # posted receives: (src, tag, tensor, fut), in post order
        self._coll = 0                                  # collective number: its tag space
        self._closed = False
        self._failure = None
        self._thread = threading.Thread(target=self._background, name=f"homa-pg-{rank}", daemon=True)
        self._thread.start()
        self._barrier_all()

    def getBackendName(self):
        return BACKEND

    # ------------------------------------------------------------ progress

    def _progress(self, wait_s=0.0):
        """Takes what arrived: requests (data, answered at once) and
        responses (sends completed). Call with _mu held."""
        try:
            m = self._client.receive(timeout=wait_s)
        except WaitTimeout:
            return False
        except RPCError as e:
            fut = self._sends.pop(e.rpc_id, None)
            peer = next((r for r, p in enumerate(self._peers) if e.peer is not None and tuple(e.peer) == p), None)
            who = f"rank {peer}" if peer is not None else f"{e.peer}"
            err = RuntimeError(f"homa_dpdk.torch: rank {self._rank}: a message to {who} failed ({e}): is that rank gone?")
            self._failure = err
            if fut is not None:
                fut.set_exception(err)
            self._fail_pending(err)
            return True
        with m:
            if not m.is_request:
                fut = self._sends.pop(m.id, None)
                if fut is not None and not fut.done():
                    fut.set_result(None)
                return True
            data = m.data
            if len(data) < _HDR.size:
                self._client.reply_async(m, b"\0")
                return True
            magic, src, tag, seq, chunk, nchunks = _HDR.unpack_from(data)
            payload = bytes(data[_HDR.size:])
            self._client.reply_async(m, b"\0")
        if magic == _MAGIC:
            self._early[(src, tag, seq, chunk)] = (payload, nchunks)
            self._match()
        return True

    def _match(self):
        """Completes posted receives whose bytes are all here, in post order
        per (source, tag) stream."""
        progress = True
        while progress:
            progress = False
            for pr in list(self._pending):
                src, tag, tensor, fut = pr
                srcs = range(self._size) if src == _ANY else [src]
                for s in srcs:
                    want = self._recv_seq[(s, tag)]
                    first = self._early.get((s, tag, want, 0))
                    if first is None:
                        continue
                    n = first[1]
                    if any((s, tag, want, c) not in self._early for c in range(n)):
                        continue
                    parts = [self._early.pop((s, tag, want, c))[0] for c in range(n)]
                    self._recv_seq[(s, tag)] = want + 1
                    self._pending.remove(pr)
                    _fill(tensor, b"".join(parts))
                    fut.set_result([tensor])
                    progress = True
                    break

    def _fail_pending(self, err):
        while self._pending:
            pr = self._pending.popleft()
            if not pr[3].done():
                pr[3].set_exception(err)

    def _background(self):
        while not self._closed:
            with self._mu:
                try:
                    busy = self._progress(0.0)
                except HomaError as e:
                    if self._closed:
                        return
                    self._failure = RuntimeError(f"homa_dpdk.torch: rank {self._rank}: {e}")
                    self._fail_pending(self._failure)
                    return
            if not busy:
                time.sleep(50e-6)

    def _wait(self, fut, what, src=None):
        """Drives progress until fut completes, or fails: after the group's
        timeout, or once a probe of src (the rank a receive waits for)
        fails."""
        start = time.monotonic()
        deadline, probe_at = start + self._timeout, start + _PROBE_AFTER
        while not fut.done():
            if self._failure is not None:
                raise self._failure
            with self._mu:
                if not fut.done():
                    self._progress(0.0002)
            now = time.monotonic()
            if now > deadline:
                raise RuntimeError(f"homa_dpdk.torch: rank {self._rank}: {what} did not complete within {self._timeout:.0f} s")
            if src is not None and src != _ANY and now > probe_at:
                self._probe(src)
                probe_at = now + _PROBE_AFTER
        return fut.value()

    def _probe(self, dst):
        """Sends dst a probe; its failure (dst's port gone) fails the group
        through _progress."""
        with self._mu:
            rid = self._client.send(self._peers[dst], _HDR.pack(_PROBE, self._rank, 0, 0, 0, 0))
            self._sends[rid] = None

    # -------------------------------------------------------- point to point

    def _send_bytes(self, dst, tag, buf):
        with self._mu:
            if self._failure is not None:
                raise self._failure
            seq = self._send_seq[(dst, tag)]
            self._send_seq[(dst, tag)] = seq + 1
            n = max(1, -(-len(buf) // self._chunk))
            futs = []
            for c in range(n):
                part = buf[c * self._chunk:(c + 1) * self._chunk]
                msg = _HDR.pack(_MAGIC, self._rank, tag, seq, c, n) + part
                rid = self._client.send(self._peers[dst], msg)
                fut = torch.futures.Future()
                self._sends[rid] = fut
                futs.append(fut)
            return futs

    def _post_recv(self, src, tag, tensor):
        fut = torch.futures.Future()
        with self._mu:
            self._pending.append((src, tag, tensor, fut))
            self._match()
        return fut

    def send(self, tensors, dst, tag=0):
        futs = self._send_bytes(dst, tag, _bytes_of(tensors[0]))
        return _create_work_from_future(torch.futures.collect_all(futs).then(lambda _: tensors))

    def recv(self, tensors, src, tag=0):
        return _create_work_from_future(self._post_recv(src, tag, tensors[0]))

    def recv_anysource(self, tensors, tag=0):
        return _create_work_from_future(self._post_recv(_ANY, tag, tensors[0]))

    # ---------------------------------------------------------- collectives

    def _tag(self):
        # Collectives run in the same order on every rank: each gets its
        # own (negative) tag, apart from the application's.
        self._coll += 1
        return -self._coll

    def _xsend(self, dst, tag, t):
        return self._send_bytes(dst, tag, _bytes_of(t))

    def _xrecv(self, src, tag, t):
        return self._wait(self._post_recv(src, tag, t), f"a receive from rank {src}", src)

    def _check_failed(self):
        """Raises the group's failure, if any. A collective's sends are not
        waited for: send copies the bytes into the arena, and the
        receiver's answer only frees them; a send that fails fails the
        group (_failure)."""
        if self._failure is not None:
            raise self._failure

    def _barrier_all(self):
        tag = self._tag()
        one = torch.zeros(1, dtype=torch.uint8)
        # Dissemination barrier: log2(n) rounds.
        k = 1
        while k < self._size:
            self._xsend((self._rank + k) % self._size, tag, one)
            self._xrecv((self._rank - k) % self._size, tag, torch.zeros(1, dtype=torch.uint8))
            self._check_failed()
            k *= 2

    def barrier(self, opts=None):
        self._barrier_all()
        return _done_work([torch.zeros(1)])

    def broadcast(self, tensors, opts):
        t = tensors[0]
        root = opts.rootRank
        tag = self._tag()
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
                self._xsend((self._rank + mask) % self._size, tag, t)
            mask >>= 1
        self._check_failed()
        return _done_work(tensors)

    def allreduce(self, tensors, opts=None):
        t = tensors[0]
        op = _op_of(opts)
        acc = t.contiguous().view(-1).clone()
        tag = self._tag()
        n = self._size
        # Recursive doubling for powers of two; otherwise gather to rank 0
        # and broadcast (binomial).
        if n & (n - 1) == 0:
            k = 1
            tmp = torch.empty_like(acc)
            while k < n:
                peer = self._rank ^ k
                self._xsend(peer, tag, acc)
                self._xrecv(peer, tag, tmp)
                self._check_failed()
                # Combine in rank order so that every rank gets the same bits.
                if peer < self._rank:
                    acc = _combine(tmp.clone(), acc, op)
                else:
                    _combine(acc, tmp, op)
                k *= 2
        else:
            acc = self._reduce_to(0, acc, op, tag)
            bo = dist.BroadcastOptions()
            bo.rootRank = 0
            self.broadcast([acc], bo)
        if op == dist.ReduceOp.AVG:
            acc = _average(acc, n)
        t.copy_(acc.view(t.shape))
        return _done_work(tensors)

    def _reduce_to(self, root, acc, op, tag):
        tmp = torch.empty_like(acc)
        if self._rank == root:
            for r in range(self._size):
                if r != root:
                    self._xrecv(r, tag, tmp)
                    _combine(acc, tmp, op)
        else:
            self._xsend(root, tag, acc)
            self._check_failed()
        return acc

    def reduce(self, tensors, opts):
        t = tensors[0]
        op = _op_of(opts)
        acc = self._reduce_to(opts.rootRank, t.contiguous().view(-1).clone(), op, self._tag())
        if self._rank == opts.rootRank:
            if op == dist.ReduceOp.AVG:
                acc = _average(acc, self._size)
            t.copy_(acc.view(t.shape))
        return _done_work(tensors)

    def allgather(self, output_lists, inputs, opts=None):
        outs, inp = output_lists[0], inputs[0]
        tag = self._tag()
        for r in range(self._size):
            if r != self._rank:
                self._xsend(r, tag, inp)
        for r in range(self._size):
            if r == self._rank:
                outs[r].copy_(inp)
            else:
                self._xrecv(r, tag, outs[r])
        self._check_failed()
        return _done_work(output_lists)

    def _allgather_base(self, output, inp, opts=None):
        outs = list(output.view(self._size, -1).unbind(0))
        self.allgather([outs], [inp.contiguous().view(-1)])
        return _done_work([output])

    def gather(self, output_lists, inputs, opts):
        root, inp = opts.rootRank, inputs[0]
        tag = self._tag()
        if self._rank == root:
            outs = output_lists[0]
            for r in range(self._size):
                if r == root:
                    outs[r].copy_(inp)
                else:
                    self._xrecv(r, tag, outs[r])
        else:
            self._xsend(root, tag, inp)
            self._check_failed()
        return _done_work(output_lists)

    def scatter(self, outputs, input_lists, opts):
        root, out = opts.rootRank, outputs[0]
        tag = self._tag()
        if self._rank == root:
            ins = input_lists[0]
            for r in range(self._size):
                if r == root:
                    out.copy_(ins[r])
                else:
                    self._xsend(r, tag, ins[r])
        else:
            self._xrecv(root, tag, out)
        return _done_work(outputs)

    def reduce_scatter(self, outputs, input_lists, opts):
        out, ins = outputs[0], input_lists[0]
        op = _op_of(opts)
        tag = self._tag()
        for r in range(self._size):
            if r != self._rank:
                self._xsend(r, tag, ins[r])
        acc = ins[self._rank].contiguous().view(-1).clone()
        tmp = torch.empty_like(acc)
        parts = {self._rank: acc}
        for r in range(self._size):
            if r != self._rank:
                self._xrecv(r, tag, tmp)
                parts[r] = tmp.clone()
        total = parts[0].clone()
        for r in range(1, self._size):  # rank order: every rank adds alike
            _combine(total, parts[r], op)
        if op == dist.ReduceOp.AVG:
            total = _average(total, self._size)
        out.copy_(total.view(out.shape))
        return _done_work(outputs)

    def alltoall(self, outputs, inputs, opts=None):
        tag = self._tag()
        for r in range(self._size):
            if r != self._rank:
                self._xsend(r, tag, inputs[r])
        for r in range(self._size):
            if r == self._rank:
                outputs[r].copy_(inputs[r])
            else:
                self._xrecv(r, tag, outputs[r])
        return _done_work(outputs)

    def alltoall_base(self, output, inp, output_split_sizes, input_split_sizes, opts=None):
        n = self._size
        ins = list(torch.split(inp, list(input_split_sizes) or inp.shape[0] // n))
        outs = list(torch.split(output, list(output_split_sizes) or output.shape[0] // n))
        self.alltoall(outs, ins)
        return _done_work([output])

    # ------------------------------------------------------------ lifetime

    def close(self):
        self._closed = True
        self._thread.join(timeout=1)
        self._client.close()


def _average(acc, n):
    if acc.is_floating_point() or acc.is_complex():
        return acc.div_(n)
    return acc.div_(n, rounding_mode="floor")


def _bytes_of(t):
    """The bytes of t's elements in row-major order (a copy when t is not
    contiguous)."""
    if t.numel() == 0:
        return b""
    return t.contiguous().view(-1).view(torch.uint8).numpy().tobytes()


def _fill(t, data):
    """Copies data (the bytes of a tensor of t's shape and dtype) into t."""
    if not data and t.numel() == 0:
        return
    src = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    if t.is_contiguous():
        t.view(-1).view(torch.uint8).copy_(src)
    else:
        tmp = torch.empty(t.shape, dtype=t.dtype)
        tmp.view(-1).view(torch.uint8).copy_(src)
        t.copy_(tmp)


def _create(store, rank, size, timeout):
    return ProcessGroupHoma(store, rank, size, timeout)


dist.Backend.register_backend(BACKEND, _create)
