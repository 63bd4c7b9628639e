"""all_reduce on 4 (or WORLD_SIZE) ranks under torchrun, with the backend
given: `--backend homa` (homa-dpdk, after `import homa_dpdk.torch`) or
`--backend gloo`. Rank 0 prints the results, which are the same for both.

    ./scripts/torch-demo.sh                      # both backends, 4 ranks
    torchrun --nproc_per_node=4 --redirects 2 --tee 2 python/examples/allreduce.py --backend homa
"""

import argparse

import torch
import torch.distributed as dist

import homa_dpdk.torch  # noqa: F401  registers "homa"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="homa", choices=["homa", "gloo"])
    args = ap.parse_args()
    # #region use
    dist.init_process_group(args.backend)  # "homa" once homa_dpdk.torch is imported; env:// as torchrun sets up
    rank, size = dist.get_rank(), dist.get_world_size()
    x = torch.full((1024, 1024), float(rank))  # 4 MB of this rank's number
    dist.all_reduce(x)  # SUM: every element is now 0 + 1 + ... + (size - 1)
    # #endregion
    lines = [f"all_reduce sum of a 4 MB float tensor of each rank's number: every element {x[0, 0].item()}, total {x.sum().item()}"]
    for name, op in [("sum", dist.ReduceOp.SUM), ("max", dist.ReduceOp.MAX), ("min", dist.ReduceOp.MIN), ("product", dist.ReduceOp.PRODUCT)]:
        t = torch.arange(1, 6, dtype=torch.int64) * (rank + 1)
        dist.all_reduce(t, op=op)
        lines.append(f"all_reduce {name:8s} of (1..5) x (rank+1): {t.tolist()}")
    b = torch.tensor([rank * 10.0])
    dist.broadcast(b, src=size - 1)
    lines.append(f"broadcast from rank {size - 1}: {b.tolist()}")
    if rank == 0:
        print(f"{args.backend}, {size} ranks:")
        for line in lines:
            print("  " + line)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
