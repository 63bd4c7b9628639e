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

The transport (attach, rendezvous, messages, receives, the progress
thread, probes) is in torch_transport.py; the collectives are here.

Threads: a collective runs in the caller's thread, which holds the
client and drives progress while it waits; a progress thread answers
and fills posted receives (what the Work of an irecv waits for) while no
call is in, taking over 10 ms after the last call unless a receive is
posted.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

from .torch_transport import _ANY, Transport, _AnySourceWork, _env_int

try:
    from torch._C._distributed_c10d import _create_work_from_future
except ImportError:  # pragma: no cover - newer torch moved it
    from torch.distributed.distributed_c10d import _create_work_from_future  # type: ignore

__all__ = ["ProcessGroupHoma", "BACKEND"]

BACKEND = "homa"

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


# all_reduce uses the ring (reduce-scatter + all-gather) from this many
# bytes up, recursive doubling below (HOMA_DPDK_TORCH_RING_BYTES).
_RING_BYTES = 1 << 20


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


class ProcessGroupHoma(Transport, dist.ProcessGroup):
    """A ProcessGroup whose traffic goes over homa-dpdk (see the module doc)."""

    def __init__(self, store, rank, size, timeout=timedelta(seconds=300)):
        super().__init__(rank, size)
        self._ring_bytes = _env_int("HOMA_DPDK_TORCH_RING_BYTES", _RING_BYTES)
        self._coll = 0                  # collective number: its tag space
        self._start(store, rank, size, timeout)
        self._enter()
        try:
            self._barrier_all()
        finally:
            self._leave()

    def getBackendName(self):
        return BACKEND

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
