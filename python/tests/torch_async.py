"""One rank of the PyTorch backend's test of what the C++ backend does
beyond torch_ranks.py: several all_reduces in flight at once (async_op,
waited for through their futures, as DDP's reducer does), in order, of
sizes on both sides of the ring's switch; all_reduce of a non-contiguous
tensor; recv from any source (the Work says who sent); a broadcast of
several parts; the bitwise reductions. Any number of ranks (3 exercises
the groups that are not a power of two). Run by torchrun or as the demo's
Go test runs torch_ranks.py; prints "rank R: async checks passed"."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import homa_dpdk.torch  # noqa: E402,F401


def main():
    dist.init_process_group("homa")
    r, n = dist.get_rank(), dist.get_world_size()
    want = n * (n + 1) / 2
    ts = [torch.full((s,), float(r + 1)) for s in (1, 1000, 400_000, 3_000_000, 7)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    torch.futures.wait_all([w.get_future() for w in works])
    for t in ts:
        assert torch.all(t == want), (t[:4], want)
    nc = torch.arange(24.).reshape(4, 6).t() * (r + 1)
    dist.all_reduce(nc)
    assert torch.equal(nc, torch.arange(24.).reshape(4, 6).t() * want), nc
    if r == 0:
        got = set()
        for _ in range(n - 1):
            t = torch.empty(3)
            src = dist.recv(t)
            got.add(src)
            assert torch.all(t == src), (src, t)
        assert got == set(range(1, n)), got
    else:
        dist.send(torch.full((3,), float(r)), 0)
    b = torch.full((2_500_000,), float(r))
    dist.broadcast(b, src=n - 1)
    assert torch.all(b == n - 1)
    x = torch.tensor([1 << r, 0xff], dtype=torch.int64)
    y = x.clone()
    dist.all_reduce(y, op=dist.ReduceOp.BOR)
    assert y.tolist() == [(1 << n) - 1, 0xff], y
    y = x.clone()
    dist.all_reduce(y, op=dist.ReduceOp.BAND)
    assert y.tolist() == [0 if n > 1 else 1, 0xff], y
    dist.barrier()
    print(f"rank {r}: async checks passed", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
