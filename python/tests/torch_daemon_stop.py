"""One rank of the daemon-stop test of the PyTorch backend: after a
barrier it prints "rank R: ready" and runs all_reduce every few
milliseconds; the test then stops the daemon. Every rank's next
collective must fail with a RuntimeError that says the session ended,
within a few seconds, not hang. A rank prints "rank R: failed after S s:
..." and exits 0."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import homa_dpdk.torch  # noqa: E402,F401


def main():
    dist.init_process_group("homa")
    rank = dist.get_rank()
    t = torch.ones(4)
    dist.all_reduce(t)
    dist.barrier()
    print(f"rank {rank}: ready", flush=True)
    last_ok = time.monotonic()
    deadline = last_ok + 30
    while time.monotonic() < deadline:
        try:
            dist.all_reduce(t)
        except RuntimeError as e:
            el = time.monotonic() - last_ok
            print(f"rank {rank}: failed after {el:.2f} s: {e}", flush=True)
            os._exit(0)  # the group is broken: no clean destroy
        last_ok = time.monotonic()
        time.sleep(0.005)
    print(f"rank {rank}: all_reduce went on for 30 s without the daemon", flush=True)
    sys.exit(1)


if __name__ == "__main__":
    main()
