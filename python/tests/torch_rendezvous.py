"""One rank of the rendezvous tests of the PyTorch backend (demo's
TestTorch_rendezvous*): a job set up wrong, which must fail in its set-up
with an error that says what is wrong, not wait for torch's timeout (30
minutes by default: init_process_group is called without one).

  --bad-dir R       rank R looks for the daemon's sockets in a directory that
                    does not exist: it fails before it publishes its entry;
                    the others must fail naming rank R.
  --world-size R=N  rank R is started with WORLD_SIZE N: the ranks must fail
                    naming both sizes.

A rank prints "rank R: init_process_group failed after S s: ERROR" and
exits 3 when its set-up failed (rank 0 first stays 20 s: its process serves
the job's store, which the others may still be reading), or "rank R:
joined" and exits 0."""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch.distributed as dist  # noqa: E402

import homa_dpdk.torch  # noqa: E402,F401


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bad-dir", type=int, default=-1)
    ap.add_argument("--world-size", default="")
    args = ap.parse_args()
    rank = int(os.environ["RANK"])
    if rank == args.bad_dir:
        os.environ["HOMA_DPDK_SOCKET_DIR"] = "/nonexistent/homa-dpdk-sockets"
    if args.world_size:
        r, n = args.world_size.split("=")
        if rank == int(r):
            os.environ["WORLD_SIZE"] = n
    start = time.monotonic()
    try:
        dist.init_process_group("homa")
    except RuntimeError as e:
        print(f"rank {rank}: init_process_group failed after {time.monotonic() - start:.1f} s: {e}", flush=True)
        if rank == 0:
            time.sleep(20)
        sys.exit(3)
    print(f"rank {rank}: joined", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
