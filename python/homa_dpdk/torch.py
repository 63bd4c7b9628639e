"""torch.distributed over homa-dpdk: ``import homa_dpdk.torch`` registers the
backend "homa", so that ``dist.init_process_group("homa", ...)`` sends a job's
point-to-point and collective traffic as Homa RPCs through the daemon's
shared-memory workers.

The backend is a C++ c10d ProcessGroup over libhoma (homa_dpdk._torch_homa,
sources in homa_dpdk/csrc/, built by python/_build/torch_ext.py). There is
one backend and no Python fallback: a compiler is part of the set-up
everywhere the package installs (the set-up builds libhoma and this module
with it), and a second, slower implementation of the same protocol would
only drift. Without the module, importing this raises an ImportError that
says what is missing and how to build it.

Operations: send, recv (from a rank or from any), isend, irecv (with
tags), barrier, broadcast, all_reduce (SUM, AVG, PRODUCT, MIN, MAX, and
the bitwise ones), reduce, all_gather (and all_gather_into_tensor),
gather, scatter, reduce_scatter (and reduce_scatter_tensor), all_to_all
(and all_to_all_single), over CPU tensors of every dtype, contiguous or
not; reductions are ATen's.

Each rank attaches to one of the daemon's hosts (``HOMA_DPDK_SOCKET_DIR``,
default ``/run/homa-dpdk/demo``, holds a socket per host, ``<ip>.sock``;
rank r takes the (LOCAL_RANK mod hosts)-th in address order), binds port
``HOMA_DPDK_PORT_BASE`` (1000) + rank (or the next free one), and publishes
``ip:port:key:size`` in the job's store (key: 64 random bits; size: the
world size it was given, which every rank must share). It waits
``HOMA_DPDK_TORCH_RENDEZVOUS_S`` (30) at most for the others' entries, then
fails naming the ranks that never published. A message is one
or more Homa RPCs whose requests carry a header (magic, source rank, tag,
sequence number in the (source, tag) stream, offset, length, the source's
key) and up to
``HOMA_DPDK_TORCH_PART_BYTES`` (1 MiB, at most the daemon's largest
message less the header) of the tensor, copied once into the transmit
arena; the receiver copies each part once from the receive pool into the
posted tensor (or, when none is posted yet, keeps a copy: at most
``HOMA_DPDK_TORCH_MAX_UNEXPECTED`` bytes, 2 GiB, and
``HOMA_DPDK_TORCH_MAX_UNEXPECTED_MSGS`` messages per rank, 65,536, past
which the group fails) and answers with a one-byte detached reply. Homa
delivers RPCs in any order: sequence numbers put a stream back in order.
A request is believed only from the rank it names (that rank's address,
its key, the client port of its first message); any other is answered,
dropped and counted (``pg.stats()["dropped_stranger"]``), never failing
the group. A part that came already is dropped and counted
(``"dropped_duplicate"``): a message completes once each of its bytes came.

Algorithms: all_reduce by recursive doubling (2 ranks: one exchange)
below ``HOMA_DPDK_TORCH_RING_BYTES`` (256 KiB), the ring (reduce-scatter
then all-gather, pipelined part by part) from there up; a part-pipelined
binomial tree for broadcast, a dissemination barrier, direct exchanges
for the rest.

Threads: one progress thread per group owns the session while callers
are away; small operations (up to ``HOMA_DPDK_TORCH_INLINE_BYTES``,
256 KiB) run inline in the caller when nothing else is queued, larger ones
go to the progress thread and return at once (DDP overlaps them with
backward), and Work.wait drives progress itself when it can. The thread
stays out for ``HOMA_DPDK_TORCH_GRACE_US`` (1000) after a call. A waiter
first looks and yields the CPU for ``HOMA_DPDK_TORCH_YIELD_US`` (100), then
sleeps in libhoma, which spins ``HOMA_DPDK_SPIN_US`` first (0 on machines
of 4 CPUs or fewer, where a spinning rank keeps its peer off the CPU). A
yield that lost the CPU for 1 ms or more (to a busy thread on the rank's
core, such as the daemon's polling loop; ``pg.stats()["yields_lost"]``)
makes the waits on that CPU sleep at once for a back-off of 5 ms, doubling
while it recurs, up to ``HOMA_DPDK_TORCH_YIELD_BACKOFF_US`` (100000; 0:
never).
The ring's parts: ``HOMA_DPDK_TORCH_RING_PARTS`` (1) per segment at least.

Failures fail the group instead of hanging: a message to a rank that is
gone fails (its port unbound), a receive that waits probes its source
every second, a session the daemon ended fails every operation; each
operation then raises RuntimeError within seconds.
"""

import atexit
import weakref

try:
    import torch  # noqa: F401
    import torch.distributed as dist
except ImportError as e:  # pragma: no cover - depends on the interpreter
    raise ImportError(f"homa_dpdk.torch needs PyTorch in this Python ({e}); on Debian: apt-get install "
                      "python3-torch, and run /usr/bin/python3") from e

try:
    from . import _torch_homa as _native
except ImportError as e:
    raise ImportError(
        "homa_dpdk.torch: the backend's C++ module homa_dpdk._torch_homa is missing or does not load "
        f"({e}); build it with `/usr/bin/python3 python/_build/torch_ext.py --inplace` "
        "(it needs g++, libtorch-dev and libhoma: make -C native)") from e

__all__ = ["ProcessGroupHoma", "BACKEND"]

BACKEND = "homa"
ProcessGroupHoma = _native.ProcessGroupHoma


# Groups still alive at exit end their sessions in order (their last
# replies sent, their sends answered) before the interpreter goes: a session
# that just vanishes can fail a peer's message that this rank already took.
_live = weakref.WeakSet()


def _create(store, rank, size, timeout):
    pg = _native.create(store, rank, size, timeout)
    _live.add(pg)
    return pg


@atexit.register
def _shutdown_all():
    for pg in list(_live):
        pg.shutdown()


try:  # torch 2.x: say the backend is for CPU tensors (else it assumes cpu and cuda, and warns)
    dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
except TypeError:  # torch 1.13: no devices
    dist.Backend.register_backend(BACKEND, _create)
