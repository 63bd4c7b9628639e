"""A rank of test_torch_yield.py (env:// rendezvous from the environment):
YIELD_TEST_OPS all_reduces of 4 B over the backend "homa", then one JSON
line on stdout: the group's counters over those operations (pg.stats()
differences) and the seconds they took."""

import json
import os
import time

import torch
import torch.distributed as dist

import homa_dpdk.torch  # noqa: F401  registers "homa"


def main():
    dist.init_process_group("homa")
    pg = dist.distributed_c10d._get_default_group()
    n = int(os.environ.get("YIELD_TEST_OPS", "300"))
    t = torch.ones(1)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    before = pg.stats()
    start = time.perf_counter()
    for _ in range(n):
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    seconds = time.perf_counter() - start
    after = pg.stats()
    assert t.item() == 1.0, t
    stats = {k: after[k] - before[k] for k in after}
    print(json.dumps({"rank": dist.get_rank(), "ops": n, "seconds": seconds, "stats": stats}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
