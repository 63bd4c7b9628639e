"""all_reduce latency and bus bandwidth, 4 B to 64 MB, and send/recv
ping-pong between ranks 0 and 1, with the backend "homa" and with gloo in
the same job (and so the same run). Run it under torchrun, e.g. through

    HOMA_TORCH_RANKS=2 ./scripts/torch-demo.sh python/examples/collectives_bench.py [--quick] [--json FILE] [--algorithms]

or, for 2 and 4 ranks with plots, `homa-dpdk perf collectives`. With
--gloo-sweep MAX it times gloo's all_reduce alone from 8 B to MAX, as
`homa-dpdk perf nccl` compares its ring with.

Rank 0 prints a table per measurement: the median time per call over the
repetitions, and bus bandwidth as NCCL's tests define it (all_reduce moves
2(n-1)/n of the tensor per rank).
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def timed(fn, reps):
    dist.barrier()
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        fn()
        times.append(time.perf_counter() - s)
    return statistics.median(times)


def gloo_sweep(top, iters, path):
    """gloo's all_reduce alone, 8 B doubling to top, as perf nccl's bench
    (nccl/bench/allreduce.c) runs its ring: per size 2 untimed calls, then
    the timed ones (iters, or by size as the bench), each after a barrier,
    its time the slowest rank's; the median, and the CPU seconds of all
    ranks (time.process_time: every thread, user and system) over the
    timed calls."""
    rank, n = dist.get_rank(), dist.get_world_size()
    rows, size = [], 8
    while size <= top:
        t = torch.ones(size // 4)
        reps = iters or (100 if size <= 64 << 10 else 30 if size <= 1 << 20 else 10 if size <= 16 << 20 else 5)
        for _ in range(2):
            dist.all_reduce(t)
        times, cpu = [], 0.0
        for _ in range(reps):
            dist.barrier()
            c, s = time.process_time(), time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - s)
            cpu += time.process_time() - c
        slowest = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        total = torch.tensor([cpu], dtype=torch.float64)
        dist.all_reduce(total)
        us = statistics.median(slowest.tolist()) * 1e6
        rows.append({"bytes": size, "iters": reps, "time_us": us, "cpu_s_per_gb": total.item() / (size * reps / 1e9)})
        if rank == 0:
            print(f"all_reduce {size} B: gloo {us:.1f}", file=sys.stderr, flush=True)
        size *= 2
    if rank == 0 and path:
        with open(path, "w") as f:
            json.dump({"ranks": n, "gloo": rows}, f, indent=2)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sizes up to 1 MB, fewer repetitions")
    ap.add_argument("--json", help="also write the results to this file (rank 0)")
    ap.add_argument("--algorithms", action="store_true",
                    help="also all_reduce with homa's ring and its recursive doubling each at every size "
                         "(groups made with HOMA_DPDK_TORCH_RING_BYTES 0 and 2^62): where the switch belongs")
    ap.add_argument("--gloo-sweep", type=int, metavar="MAX",
                    help="only gloo's all_reduce, 8 B doubling to MAX bytes, with its CPU seconds "
                         "(perf nccl's comparison); the default group is gloo's")
    ap.add_argument("--iters", type=int, default=0, help="--gloo-sweep: timed calls per size (0: by size)")
    args = ap.parse_args()
    if args.gloo_sweep:
        dist.init_process_group("gloo")
        return gloo_sweep(args.gloo_sweep, args.iters, args.json)
    import homa_dpdk.torch  # noqa: F401  registers "homa" (gloo's sweep needs no binding)
    dist.init_process_group("homa")
    rank, n = dist.get_rank(), dist.get_world_size()
    groups = {"homa": None, "gloo": dist.new_group(backend="gloo")}
    if args.algorithms:
        for name, limit in (("homa_ring", 0), ("homa_doubling", 1 << 62)):
            os.environ["HOMA_DPDK_TORCH_RING_BYTES"] = str(limit)
            groups[name] = dist.new_group(backend="homa")
        del os.environ["HOMA_DPDK_TORCH_RING_BYTES"]
    top = 1 << 20 if args.quick else 64 << 20
    sizes = [4]
    while sizes[-1] < top:
        sizes.append(sizes[-1] * (16 if args.quick else 4))
    results = {"ranks": n, "all_reduce": [], "ping_pong": []}
    for size in sizes:
        t = torch.ones(max(size // 4, 1))
        reps = 10 if size >= 1 << 20 else (50 if args.quick else 300)
        row = {"bytes": size}
        for name, g in groups.items():
            for _ in range(3):
                dist.all_reduce(t, group=g)
            s = timed(lambda: dist.all_reduce(t, group=g), reps)
            row[name + "_us"] = s * 1e6
            row[name + "_busbw_gbps"] = 2 * (n - 1) / n * size * 8 / s / 1e9
        results["all_reduce"].append(row)
        if rank == 0:
            print(f"all_reduce {size} B: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items() if k.endswith("_us")),
                  file=sys.stderr, flush=True)
    pp_groups = {k: groups[k] for k in ("homa", "gloo")}
    for size in sizes:
        t = torch.ones(max(size // 4, 1))
        reps = 10 if size >= 1 << 20 else (50 if args.quick else 300)
        row = {"bytes": size}
        for name, g in pp_groups.items():
            def pp():
                if rank == 0:
                    dist.send(t, 1, group=g)
                    dist.recv(t, 1, group=g)
                elif rank == 1:
                    dist.recv(t, 0, group=g)
                    dist.send(t, 0, group=g)
            pp()
            row[name + "_us"] = timed(pp, reps) * 1e6
        results["ping_pong"].append(row)
        if rank == 0:
            print(f"ping_pong {size} B: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items() if k.endswith("_us")),
                  file=sys.stderr, flush=True)
    if rank == 0:
        print(f"all_reduce, {n} ranks (median per call; bus bandwidth as NCCL's tests):")
        print(f"{'bytes':>10} {'homa µs':>10} {'gloo µs':>10} {'gloo/homa':>10} {'homa Gb/s':>10} {'gloo Gb/s':>10}")
        for r in results["all_reduce"]:
            print(f"{r['bytes']:>10} {r['homa_us']:>10.1f} {r['gloo_us']:>10.1f} {r['gloo_us'] / r['homa_us']:>10.2f} "
                  f"{r['homa_busbw_gbps']:>10.3f} {r['gloo_busbw_gbps']:>10.3f}")
        if args.algorithms:
            print(f"homa's all_reduce algorithms, {n} ranks (median per call):")
            print(f"{'bytes':>10} {'ring µs':>10} {'doubling µs':>12} {'doubling/ring':>14}")
            for r in results["all_reduce"]:
                print(f"{r['bytes']:>10} {r['homa_ring_us']:>10.1f} {r['homa_doubling_us']:>12.1f} "
                      f"{r['homa_doubling_us'] / r['homa_ring_us']:>14.2f}")
        print("send/recv ping-pong between ranks 0 and 1 (median round trip):")
        print(f"{'bytes':>10} {'homa µs':>10} {'gloo µs':>10} {'gloo/homa':>10}")
        for r in results["ping_pong"]:
            print(f"{r['bytes']:>10} {r['homa_us']:>10.1f} {r['gloo_us']:>10.1f} {r['gloo_us'] / r['homa_us']:>10.2f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
