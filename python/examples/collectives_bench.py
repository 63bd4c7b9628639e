"""all_reduce latency and bus bandwidth, 4 B to 64 MB, and send/recv
ping-pong between ranks 0 and 1, with the backend "homa" and with gloo in
the same job (and so the same run). Run it under torchrun, e.g. through

    HOMA_TORCH_RANKS=2 ./scripts/torch-demo.sh python/examples/collectives_bench.py [--quick] [--json FILE] [--algorithms]

or, for 2 and 4 ranks with plots, `homa-dpdk perf collectives`.

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

import homa_dpdk.torch  # noqa: F401  registers "homa"


def timed(fn, reps):
    dist.barrier()
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        fn()
        times.append(time.perf_counter() - s)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sizes up to 1 MB, fewer repetitions")
    ap.add_argument("--json", help="also write the results to this file (rank 0)")
    ap.add_argument("--algorithms", action="store_true",
                    help="also all_reduce with homa's ring and its recursive doubling each at every size "
                         "(groups made with HOMA_DPDK_TORCH_RING_BYTES 0 and 2^62): where the switch belongs")
    args = ap.parse_args()
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
