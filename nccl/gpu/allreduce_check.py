"""The NCCL plugin's one-GPU check, one rank (scripts/gpu-nccl-check.sh
starts two on one GPU): torch.distributed's NCCL backend runs all_reduce
from --min to --max bytes (doubling), times each size, checks every
element against the sum it must be, and rank 0 writes one JSON line per
size to --out. Without CUDA it says so and exits 77 (skipped)."""

import argparse
import json
import os
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--min", type=int, default=8, help="smallest size, bytes")
    p.add_argument("--max", type=int, default=128 << 20, help="largest size, bytes")
    p.add_argument("--iters", type=int, default=20, help="timed all_reduces per size")
    p.add_argument("--warmup", type=int, default=5, help="untimed all_reduces per size")
    p.add_argument("--out", required=True, help="rank 0's JSON lines")
    a = p.parse_args()
    if a.min < 4 or a.max < a.min or a.iters < 1 or a.warmup < 0:
        p.error("want 4 <= --min <= --max, --iters >= 1, --warmup >= 0")

    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        print("allreduce_check: no CUDA here: the GPU part is skipped", file=sys.stderr)
        return 77
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_DEVICE", "0")))
    dist.init_process_group("nccl")
    rows = []
    size = a.min
    while size <= a.max:
        n = max(1, size // 4)
        base = (torch.arange(n, device="cuda") % 251).float()
        x = base + rank
        for _ in range(a.warmup):
            y = x.clone()
            dist.all_reduce(y)
        torch.cuda.synchronize()
        ys = [x.clone() for _ in range(a.iters)]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for y in ys:
            dist.all_reduce(y)
        torch.cuda.synchronize()
        us = (time.perf_counter() - t0) / a.iters * 1e6
        want = base * world + world * (world - 1) / 2
        ok = all(bool(torch.equal(y, want)) for y in ys)
        algbw = n * 4 / us / 1e3  # GB/s
        rows.append({"bytes": n * 4, "time_us": round(us, 2), "algbw_gbps": round(algbw, 3),
                     "busbw_gbps": round(algbw * 2 * (world - 1) / world, 3), "ok": ok})
        size *= 2
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        with open(a.out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
