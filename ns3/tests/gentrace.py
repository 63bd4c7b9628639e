#!/usr/bin/env python3
"""Writes a trace in perf cluster's format for homa-ns3-tcp: open-loop Poisson
arrivals at every host, uniformly random destinations, sizes drawn from one of
the Homa papers' workloads (engine/workload/testdata/wN.csv) or log-uniform.
The offered load is a fraction of the host links' rate; the trace's length in
time follows from it and the number of messages.

  gentrace.py --messages 100000 --load 0.8 --sizes w3:3,w4:1 --max-size 4000000 > t.csv
"""
import argparse
import bisect
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "..", "..", "engine", "workload", "testdata")


def size_sampler(spec, max_size, rng):
    """A function drawing one message size: wN (a workload's CDF),
    loguniform:MIN:MAX, or a weighted mixture of those (w3:3,w4:1)."""
    if "," in spec:
        parts = [p.rsplit(":", 1) for p in spec.split(",")]
        draws = [size_sampler(name, max_size, rng) for name, _ in parts]
        weights = [float(w) for _, w in parts]
        return lambda: rng.choices(draws, weights)[0]()
    if spec.startswith("loguniform:"):
        lo, hi = (float(x) for x in spec.split(":")[1:3])
        return lambda: max(1, min(max_size, int(math.exp(rng.uniform(math.log(lo), math.log(hi))))))
    sizes, weights = [], []
    with open(os.path.join(WORKLOADS, spec + ".csv")) as f:
        next(f)
        for line in f:
            b, w = line.strip().split(",")
            sizes.append(min(int(b), max_size))
            weights.append(float(w))
    cum, total = [], 0.0
    for w in weights:
        total += w
        cum.append(total)
    return lambda: sizes[min(len(sizes) - 1, bisect.bisect_left(cum, rng.random() * total))]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--racks", type=int, default=9)
    p.add_argument("--hosts-per-rack", type=int, default=16)
    p.add_argument("--cores", type=int, default=4)
    p.add_argument("--link-bps", type=int, default=10_000_000_000)
    p.add_argument("--uplink-bps", type=int, default=40_000_000_000)
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--load", type=float, default=0.8, help="fraction of each host link offered")
    p.add_argument("--sizes", default="w4", help="w1..w5, loguniform:MIN:MAX, or a mixture such as w3:3,w4:1 (default w4)")
    p.add_argument("--max-size", type=int, default=4_000_000, help="sizes above are cut to this")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()

    rng = random.Random(a.seed)
    draw = size_sampler(a.sizes, a.max_size, rng)
    hosts = a.racks * a.hosts_per_rack
    sizes = [draw() for _ in range(a.messages)]
    mean = sum(sizes) / len(sizes)
    # Each host offers load x link rate: messages per ns over all hosts.
    rate = hosts * a.load * a.link_bps / 8 / mean / 1e9
    out = sys.stdout
    out.write("# homa-dpdk cluster trace 1\n")
    for k, v in [("racks", a.racks), ("hosts_per_rack", a.hosts_per_rack), ("cores", a.cores),
                 ("link_bps", a.link_bps), ("uplink_bps", a.uplink_bps), ("prop_ns", 0),
                 ("switch_ns", 250), ("host_ns", 1000), ("recv_ns", 500), ("mtu", 1500)]:
        out.write(f"# {k} {v}\n")
    out.write("id,at_ns,src,dst,size,after\n")
    t = 0.0
    for i, size in enumerate(sizes):
        t += rng.expovariate(rate)
        src = rng.randrange(hosts)
        dst = rng.randrange(hosts - 1)
        dst += dst >= src
        out.write(f"{i},{int(t)},{src},{dst},{size},-1\n")
    sys.stderr.write(f"gentrace: {a.messages} messages, mean {mean:.0f} B, {sum(sizes)/1e9:.2f} GB, "
                     f"{t/1e6:.2f} ms at load {a.load}\n")


if __name__ == "__main__":
    main()
