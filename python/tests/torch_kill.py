"""One rank of the failure test of the PyTorch backend: after a barrier,
the last rank exits at once (as a killed rank would: its worker session
ends, its port is unbound); the others' all_reduce must fail with an error
that names the rank, within a few seconds, not hang. With --irecv, they
first wait on an irecv from it (its Work waited for in C++, the receive
seen to by the backend's progress thread), which must fail the same way.
A surviving rank prints "rank R: failed after S s: ..." and exits 0."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import homa_dpdk.torch  # noqa: E402,F401


def main():
    dist.init_process_group("homa")
    rank, size = dist.get_rank(), dist.get_world_size()
    t = torch.ones(4)
    dist.all_reduce(t)
    dist.barrier()
    if rank == size - 1:
        os._exit(3)  # no goodbye
    time.sleep(0.2)  # the dead rank's session is gone
    start = time.monotonic()
    try:
        if "--irecv" in sys.argv:  # a receive only the progress thread sees to
            dist.irecv(torch.empty(4), src=size - 1, tag=3).wait()
        for _ in range(3):
            dist.all_reduce(t)
    except RuntimeError as e:
        el = time.monotonic() - start
        if el > 10:
            print(f"rank {rank}: failed only after {el:.1f} s: {e}", flush=True)
            sys.exit(1)
        print(f"rank {rank}: failed after {el:.2f} s: {e}", flush=True)
        os._exit(0)  # the group is broken: no clean destroy
    print(f"rank {rank}: all_reduce with a dead rank did not fail", flush=True)
    sys.exit(1)


if __name__ == "__main__":
    main()
