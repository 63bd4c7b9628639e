"""One rank of the stranger test of the PyTorch backend (2 ranks, run by
demo's TestTorch_strangerOnARanksHostIsDropped with
HOMA_DPDK_TORCH_MAX_UNEXPECTED at 1 MiB).

Rank 0 also opens a second session on its own host -- a stranger: another
worker of the same daemon, at the address rank 1 knows as rank 0's -- and
sends rank 1's port crafted messages in the backend's framing: a part past
its message's end, a message claiming 2**62 bytes, 2 MiB of parts for
receives never posted, a short one, a bad magic, and forgeries of rank 0's
next messages (the point-to-point one rank 1 is about to receive, and the
next 60 collectives'), first without rank 0's key, then with it (read from
the job's store) but from the stranger's own client port. Then the job goes
on: rank 1 receives rank 0's tensor and both run 20 all_reduces.

Rank 1 prints "rank 1: 21 checks passed; dropped_stranger D of S stranger
messages" and exits 0 when every stranger message was dropped and counted
and every result is right; rank 0 prints "rank 0: stranger: A of S
answered". Either raises (exit 1) otherwise. HOMA_TEST_STRANGER_ONLY=PREFIX
sends only the messages whose description starts with PREFIX ("2 MiB",
"rank 0's next send", "collective", ...)."""

import datetime
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import homa_dpdk  # noqa: E402
import homa_dpdk.torch  # noqa: E402,F401

MAGIC, PROBE = 0x484F4D41, 0x50524F42


def header(tag, seq, offset, total, key=0, src=0, magic=MAGIC):
    """The backend's part header (transport.hpp), claiming rank src."""
    return struct.pack("<IIqQQQQ", magic, src, tag, seq, offset, total, key)


def published(rank):
    """("ip", port, key) that rank published in the job's store."""
    c10d = dist.distributed_c10d
    store = dist.PrefixStore(c10d._pg_names[c10d._get_default_group()], c10d._get_default_store())
    parts = store.get(f"homa_dpdk/{rank}").decode().split(":")
    return parts[0], int(parts[1]), int(parts[2], 16) if len(parts) > 2 else 0


def stranger_messages(key0):
    """The crafted requests: (what, bytes)."""
    f = struct.pack("<4f", 1e6, 1e6, 1e6, 1e6)
    out = [("past its end", header(5, 0, 100, 10) + b"x" * 16),
           ("2**62 bytes", header(6, 0, 0, 1 << 62) + b"x" * 1000),
           ("short", b"HOMA"),
           ("bad magic", header(9, 0, 0, 16, magic=0x12345678) + f),
           ("rank 0's next send", header(9, 0, 0, 16) + f)]
    out += [(f"2 MiB unexpected, part {i}", header(7, i, 0, 65536) + bytes(65536)) for i in range(32)]
    out += [(f"collective {t}", header(-t, 0, 0, 16) + f) for t in range(1, 61)]
    # With rank 0's key, from another client port than rank 0's.
    out += [("keyed: past its end", header(5, 0, 100, 10, key0) + b"x" * 16),
            ("keyed: rank 0's next send", header(9, 0, 0, 16, key0) + f)]
    out += [(f"keyed: collective {t}", header(-t, 0, 0, 16, key0) + f) for t in range(1, 11)]
    only = os.environ.get("HOMA_TEST_STRANGER_ONLY")  # one kind alone (by its name's start), to see what it does
    return [m for m in out if not only or m[0].startswith(only)]


def attack():
    """Rank 0's stranger: returns (answered, sent)."""
    dirn = os.environ.get("HOMA_DPDK_SOCKET_DIR", "/run/homa-dpdk/demo")
    hosts = sorted((f for f in os.listdir(dirn) if f.endswith(".sock")),
                   key=lambda f: tuple(int(x) for x in f[:-5].split(".")))
    ip1, port1, _ = published(1)
    _, _, key0 = published(0)
    msgs = stranger_messages(key0)
    answered = 0
    with homa_dpdk.Client(os.path.join(dirn, hosts[0]), spin_us=0) as c:
        ids = [c.send((ip1, port1), m) for _, m in msgs]
        for i in ids:
            try:
                with c.wait(i, 5.0):
                    answered += 1
            except homa_dpdk.HomaError as e:
                print(f"rank 0: stranger: no answer: {e}", flush=True)
    return answered, len(msgs)


def main():
    dist.init_process_group("homa", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    t = torch.ones(4)
    dist.all_reduce(t)
    dist.barrier()
    checks = 0
    if rank == 0:
        answered, sent = attack()
        print(f"rank 0: stranger: {answered} of {sent} answered", flush=True)
        dist.send(torch.arange(4.0), 1, tag=9)
    else:
        got = torch.zeros(4)
        dist.recv(got, 0, tag=9)
        if not torch.equal(got, torch.arange(4.0)):
            raise AssertionError(f"rank 1: tag 9 brought {got}, not rank 0's {torch.arange(4.0)}")
        checks += 1
    for i in range(20):
        t = torch.full((4,), float(rank + 1 + i))
        dist.all_reduce(t)
        if not torch.equal(t, torch.full((4,), float(3 + 2 * i))):
            raise AssertionError(f"rank {rank}: all_reduce {i}: {t}")
        checks += 1
    dist.barrier()
    if rank == 1:
        st = dist.distributed_c10d._get_default_group().stats()
        sent = len(stranger_messages(0))
        print(f"rank 1: {checks} checks passed; dropped_stranger {st.get('dropped_stranger')} of {sent} stranger "
              f"messages; stats {st}", flush=True)
        if st.get("dropped_stranger") != sent:
            sys.exit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
