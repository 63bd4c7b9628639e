"""One rank of the PyTorch backend's tests (run by demo's Go test under a
daemon serving several hosts, or by torchrun): every operation of the
backend "homa" against the same on gloo, over several dtypes and shapes.
Prints "rank R: N checks passed" and exits 0, or raises."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import homa_dpdk.torch  # noqa: E402,F401  registers "homa"

DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8, torch.bool,
          torch.float16, torch.bfloat16, torch.complex64, torch.complex128]
SHAPES = [(1,), (7,), (3, 5), (300_000,)]


def sample(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_complex:
        re, im = torch.rand(shape, generator=g) * 4 - 2, torch.rand(shape, generator=g) * 4 - 2
        return torch.complex(re, im).to(dtype)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g) * 4 - 2).to(dtype)
    lo, hi = (0, 4) if dtype == torch.uint8 else (-3, 4)
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


GLOO_DTYPES = {torch.float32, torch.float64, torch.float16, torch.int32, torch.int64, torch.int8, torch.uint8}


def expected_reduce(xs, op):
    """The reduction of every rank's input, computed here (gloo takes
    neither bool nor bfloat16)."""
    st = torch.stack(xs)
    if st.dtype == torch.bool:
        return st.any(0) if op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX) else st.all(0)
    if op == dist.ReduceOp.MAX:
        return st.max(0).values
    if op == dist.ReduceOp.MIN:
        return st.min(0).values
    if st.dtype.is_complex:
        wide = st.to(torch.complex128)
    else:
        wide = st.double() if st.dtype.is_floating_point else st.long()
    if op == dist.ReduceOp.PRODUCT:
        r = wide.prod(0)
    else:
        r = wide.sum(0)
        if op == dist.ReduceOp.AVG:
            r = r / len(xs)
    return r.to(st.dtype)


def main():
    dist.init_process_group("homa")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    checks = 0

    def same(a, b, what):
        nonlocal checks
        if a.dtype.is_complex:
            ok = a.shape == b.shape and torch.allclose(a.to(torch.complex128), b.to(torch.complex128), rtol=1e-4, atol=1e-4)
        elif a.dtype.is_floating_point:  # reductions add in different orders
            rtol, atol = {torch.float64: (1e-12, 1e-12), torch.bfloat16: (2e-2, 0.1)}.get(a.dtype, (1e-2, 1e-2))
            ok = a.shape == b.shape and torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol)
        else:
            ok = torch.equal(a, b)
        if not ok:
            raise AssertionError(f"rank {rank}: {what}: homa {a.flatten()[:8]} != gloo {b.flatten()[:8]}")
        checks += 1

    for dtype in DTYPES:
        for shape in SHAPES:
            if dtype == torch.bool and len(shape) == 1 and shape[0] > 1000:
                continue
            x = sample(dtype, shape, 17 * rank + 3)
            ops = [dist.ReduceOp.SUM]
            if not dtype.is_complex:  # torch itself allows only SUM and AVG on complex tensors
                ops += [dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT]
            if dtype.is_floating_point or dtype.is_complex:
                ops.append(dist.ReduceOp.AVG)
            for op in ops:
                if dtype == torch.bool and op == dist.ReduceOp.PRODUCT:
                    continue
                if op == dist.ReduceOp.PRODUCT and shape[0] > 1000:
                    continue
                a = x.clone()
                dist.all_reduce(a, op=op)
                xs = [sample(dtype, shape, 17 * r + 3) for r in range(size)]
                same(a, expected_reduce(xs, op), f"all_reduce {op} {dtype} {shape} (computed)")
                if dtype in GLOO_DTYPES and op != dist.ReduceOp.AVG:  # gloo 1.13 has no AVG
                    b = x.clone()
                    dist.all_reduce(b, op=op, group=gloo)
                    same(a, b, f"all_reduce {op} {dtype} {shape} (gloo)")
            gl = dtype in GLOO_DTYPES
            for root in range(size):
                a = x.clone()
                dist.broadcast(a, src=root)
                same(a, sample(dtype, shape, 17 * root + 3), f"broadcast from {root} {dtype} {shape}")
                if gl:
                    b = x.clone()
                    dist.broadcast(b, src=root, group=gloo)
                    same(a, b, f"broadcast from {root} {dtype} {shape} (gloo)")
            outs_a = [torch.empty_like(x) for _ in range(size)]
            dist.all_gather(outs_a, x)
            for r in range(size):
                same(outs_a[r], sample(dtype, shape, 17 * r + 3), f"all_gather [{r}] {dtype} {shape}")
            if gl:
                outs_b = [torch.empty_like(x) for _ in range(size)]
                dist.all_gather(outs_b, x, group=gloo)
                for r in range(size):
                    same(outs_a[r], outs_b[r], f"all_gather [{r}] {dtype} {shape} (gloo)")
            a = x.clone()
            dist.reduce(a, dst=size - 1)
            if rank == size - 1:
                xs = [sample(dtype, shape, 17 * r + 3) for r in range(size)]
                same(a, expected_reduce(xs, dist.ReduceOp.SUM), f"reduce {dtype} {shape}")
    # gather, scatter, reduce_scatter, all_to_all (list and single), and
    # all_gather_into_tensor, against results computed from the inputs.
    for dtype in (torch.float32, torch.int64, torch.bool, torch.bfloat16):
        for shape in ((5,), (2, 3)):
            xs = [sample(dtype, shape, 31 * r + 1) for r in range(size)]
            x = xs[rank]
            for root in range(size):
                outs = [torch.empty_like(x) for _ in range(size)] if rank == root else None
                dist.gather(x, gather_list=outs, dst=root)
                if rank == root:
                    for r in range(size):
                        same(outs[r], xs[r], f"gather to {root} [{r}] {dtype} {shape}")
                got = torch.empty_like(x)
                dist.scatter(got, scatter_list=[xs[r] + 0 if dtype != torch.bool else xs[r].clone() for r in range(size)] if rank == root else None, src=root)
                same(got, xs[rank], f"scatter from {root} {dtype} {shape}")
            if dtype != torch.bool:
                ins = [sample(dtype, shape, 100 * rank + r) for r in range(size)]
                got = torch.empty_like(x)
                dist.reduce_scatter(got, ins)
                want = expected_reduce([sample(dtype, shape, 100 * q + rank) for q in range(size)], dist.ReduceOp.SUM)
                same(got, want, f"reduce_scatter {dtype} {shape}")
            ins = [sample(dtype, shape, 1000 * rank + r) for r in range(size)]
            outs = [torch.empty_like(x) for _ in range(size)]
            dist.all_to_all(outs, ins)
            for q in range(size):
                same(outs[q], sample(dtype, shape, 1000 * q + rank), f"all_to_all from {q} {dtype} {shape}")
            flat_in = torch.cat([t.reshape(1, -1) for t in ins])
            flat_out = torch.empty_like(flat_in)
            dist.all_to_all_single(flat_out, flat_in)
            for q in range(size):
                same(flat_out[q].reshape(shape), sample(dtype, shape, 1000 * q + rank), f"all_to_all_single from {q} {dtype} {shape}")
            if dtype != torch.bool:
                stacked = torch.stack([sample(dtype, shape, 100 * rank + r) for r in range(size)])
                got = torch.empty_like(x)
                dist.reduce_scatter_tensor(got, stacked)
                want = expected_reduce([sample(dtype, shape, 100 * q + rank) for q in range(size)], dist.ReduceOp.SUM)
                same(got, want, f"reduce_scatter_tensor {dtype} {shape}")
            big = torch.empty((size,) + shape, dtype=dtype)
            dist.all_gather_into_tensor(big, x)
            for r in range(size):
                same(big[r], xs[r], f"all_gather_into_tensor [{r}] {dtype} {shape}")
    # Point to point: a ring of sends with tags, sync and async, and a
    # non-contiguous tensor.
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    for tag in (0, 5):
        out = torch.arange(12, dtype=torch.float32).reshape(3, 4) + 100 * rank
        got = torch.empty(3, 4).t()  # (4, 3), non-contiguous
        r = dist.irecv(got, src=prv, tag=tag)
        s = dist.isend(out.t(), dst=nxt, tag=tag)
        s.wait()
        r.wait()
        want = (torch.arange(12, dtype=torch.float32).reshape(3, 4) + 100 * prv).t()
        same(got, want, f"isend/irecv tag {tag}")
    big = torch.arange(3_000_000, dtype=torch.int32) * (rank + 1)  # 12 MB: chunks
    if rank % 2 == 0 and nxt != rank:
        dist.send(big, dst=nxt, tag=9)
    if rank % 2 == 1 or size == 1:
        got = torch.empty_like(big)
        dist.recv(got, src=prv, tag=9)
        same(got, torch.arange(3_000_000, dtype=torch.int32) * (prv + 1), "send/recv 12 MB")
    # A subgroup of the first two ranks: its own ports and store prefix.
    if size >= 2:
        sub = dist.new_group([0, 1], backend="homa")
        if rank < 2:
            a = torch.tensor([rank + 1.0, 10.0 * rank])
            dist.all_reduce(a, group=sub)
            same(a, torch.tensor([3.0, 10.0]), "all_reduce on the subgroup [0, 1]")
    dist.barrier()
    print(f"rank {rank}: {checks} checks passed", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
