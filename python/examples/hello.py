#!/usr/bin/env python3
"""The smallest Python worker: attach to the homa-dpdk daemon's worker
socket, send a numpy array as one Homa RPC and print the response.

    python3 python/examples/hello.py --socket /run/homa-dpdk/demo/10.0.0.1.sock --to 10.0.0.2:99

Against `homa-dpdk demo --workers /run/homa-dpdk/demo`, with the echo
example serving port 99 on 10.0.0.2, it prints the array echoed.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # this tree's homa_dpdk

import numpy as np  # noqa: E402

import homa_dpdk  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", default="/run/homa-dpdk/demo/10.0.0.1.sock", help="the daemon's worker socket")
    ap.add_argument("--to", default="10.0.0.2:99", help="the server's IP:PORT")
    args = ap.parse_args()
    ip, _, port = args.to.rpartition(":")
    # #region call
    with homa_dpdk.Client(args.socket) as c:
        msg = c.call((ip, int(port)), np.arange(8, dtype=np.float32), timeout=5.0)
        with msg:  # release() on exit: the receive pool's pages go back
            a = np.frombuffer(msg.data, dtype=np.float32)  # a view of the pool, no copy
            print(f"{ip}:{port} answered {a.tolist()}")
    # #endregion


if __name__ == "__main__":
    main()
