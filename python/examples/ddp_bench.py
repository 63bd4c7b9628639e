"""A DistributedDataParallel training step, the backend "homa" against gloo
in the same job: the same MLP, the same seeds and the same batches, one
DDP replica over each backend plus a third whose steps skip communication
(DDP's no_sync()), stepped in turn so machine noise meets all three.

Run it as perf collectives does (one process per rank, env:// rendezvous;
`homa-dpdk perf collectives` launches it after collectives_bench.py), or

    HOMA_TORCH_RANKS=2 ./scripts/torch-demo.sh python/examples/ddp_bench.py [--steps N] [--json FILE]

Each step is zero_grad, forward, an MSE loss, backward (where DDP
all_reduces the gradients, in buckets) and SGD's update. Before a step the
ranks meet at a gloo barrier (not timed); a step's time is that of its
slowest rank. After the steps rank 0 writes every step's time per variant
and how far homa's trajectory is from gloo's: the largest relative
difference between the two replicas' losses at any step on any rank, and
the largest difference of any parameter at the end, absolute and relative
to the largest parameter; also whether each backend's replicas agree
across ranks. The judging (tolerances, medians) is the Go side's.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import homa_dpdk.torch  # noqa: F401  registers "homa"


def model(width, out):
    """Three Linear layers: width*(2*width+out) weights, ~10 MiB of
    float32 gradients at width 1024, out 512."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, out))


def flat(m):
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()])


def replicas_differ(m, group):
    """Largest absolute difference between this rank's parameters and
    rank 0's, over every rank (the replicas of one backend should agree
    exactly)."""
    p = flat(m)
    p0 = p.clone()
    dist.broadcast(p0, 0, group=group)
    d = torch.tensor([float((p - p0).abs().max())])
    dist.all_reduce(d, op=dist.ReduceOp.MAX, group=group)
    return float(d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50, help="timed steps per variant")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps per variant first")
    ap.add_argument("--batch", type=int, default=1, help="samples per rank per step")
    ap.add_argument("--width", type=int, default=1024, help="the MLP's input and hidden width")
    ap.add_argument("--out", type=int, default=512, help="the MLP's output width")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--json", help="write the results to this file (rank 0)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("homa")
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    # Three replicas of one model: DDP over homa (the default group), DDP
    # over gloo, and DDP over gloo stepped under no_sync() (no
    # all_reduce: the compute baseline; its parameters drift per rank,
    # which does not matter to its time).
    variants = {
        "homa": DDP(model(args.width, args.out), process_group=None),
        "gloo": DDP(model(args.width, args.out), process_group=gloo),
        "compute": DDP(model(args.width, args.out), process_group=gloo),
    }
    opts = {k: torch.optim.SGD(m.parameters(), lr=args.lr) for k, m in variants.items()}
    params = sum(p.numel() for p in variants["homa"].parameters())
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own data
    total = args.warmup + args.steps
    batches = [(torch.randn(args.batch, args.width, generator=gen), torch.randn(args.batch, args.out, generator=gen))
               for _ in range(total)]
    loss_fn = nn.MSELoss()
    times = {k: [] for k in variants}
    losses = {k: [] for k in variants}
    order = list(variants)
    for i, (x, y) in enumerate(batches):
        # Rotate which variant goes first, so none always follows another.
        for k in order[i % 3:] + order[:i % 3]:
            m, opt = variants[k], opts[k]
            dist.barrier(group=gloo)
            s = time.perf_counter()
            opt.zero_grad(set_to_none=False)
            if k == "compute":
                with m.no_sync():
                    loss = loss_fn(m(x), y)
                    loss.backward()
            else:
                loss = loss_fn(m(x), y)
                loss.backward()
            opt.step()
            e = time.perf_counter() - s
            losses[k].append(float(loss))
            if i >= args.warmup:
                times[k].append(e * 1e3)
        if rank == 0 and (i + 1) % 10 == 0:
            print(f"ddp step {i + 1}/{total}: " + ", ".join(f"{k} {losses[k][-1]:.6f}" for k in ("homa", "gloo")),
                  file=sys.stderr, flush=True)
    # A step's time is its slowest rank's.
    step_ms = {}
    for k, ts in times.items():
        t = torch.tensor(ts, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=gloo)
        step_ms[k] = t.tolist()
    # homa against gloo: the losses on this rank at every step, the
    # parameters at the end; the largest over ranks.
    lh, lg = torch.tensor(losses["homa"], dtype=torch.float64), torch.tensor(losses["gloo"], dtype=torch.float64)
    ph, pg = flat(variants["homa"]), flat(variants["gloo"])
    diffs = torch.tensor([
        float(((lh - lg).abs() / lg.abs().clamp_min(1e-12)).max()),
        float((ph - pg).abs().max()),
        float((ph - pg).abs().max() / pg.abs().max().clamp_min(1e-12)),
        float((ph - flat(model(args.width, args.out))).abs().max()),  # how far training moved them
    ], dtype=torch.float64)
    dist.all_reduce(diffs, op=dist.ReduceOp.MAX, group=gloo)
    replicas = {"homa": replicas_differ(variants["homa"], gloo), "gloo": replicas_differ(variants["gloo"], gloo)}
    if rank == 0:
        pg = dist.distributed_c10d._get_default_group()
        res = {
            "ranks": n,
            "torch": torch.__version__,
            "homa_impl": f"{type(pg).__module__}.{type(pg).__qualname__}",  # whichever registered "homa"
            "model": f"MLP {args.width}-{args.width}-{args.width}-{args.out} (3 Linear, ReLU)",
            "params": params,
            "grad_bytes": params * 4,
            "batch": args.batch,
            "warmup": args.warmup,
            "steps": args.steps,
            "lr": args.lr,
            "step_ms": step_ms,
            "loss_max_rel_diff": float(diffs[0]),
            "param_max_abs_diff": float(diffs[1]),
            "param_max_rel_diff": float(diffs[2]),
            "param_max_update": float(diffs[3]),
            "replica_max_abs_diff": replicas,
            "final_loss": {k: losses[k][-1] for k in ("homa", "gloo")},
        }
        med = {k: sorted(v)[len(v) // 2] for k, v in step_ms.items() if v}
        print(f"ddp, {n} ranks, {params * 4 / 2**20:.1f} MiB of gradients, batch {args.batch}: median step (ms) "
              + ", ".join(f"{k} {v:.2f}" for k, v in med.items())
              + f"; loss max rel diff {diffs[0]:.2e}, param max abs diff {diffs[1]:.2e}", file=sys.stderr, flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=2)
    dist.barrier(group=gloo)
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without running destructors: torch 1.13 can hang destroying a
    # gloo group that a DDP reducer still holds (seen once in 4 ranks: the
    # destructor joins gloo's worker threads holding the GIL while one of
    # them waits for the GIL to free a tensor). Nothing is left to release
    # that the process's exit does not.
    os._exit(0)


if __name__ == "__main__":
    main()
