#!/usr/bin/env python3
"""Servers that answer and leave at once, as a new user writes one: round
after round, a Client opened in a with block binds --port + round, prints
"closing_server: bound PORT", answers --calls requests with --size-byte
numpy arrays and leaves the block (its close) right after the last reply.
Odd rounds answer with reply_async, so the last reply is often still in
the submission ring when the client closes.

Reply i of round r (i: the request's first byte) holds
byte(k*7 + r*3 + i) at offset k, so the caller can check every byte.
Used by hub/linger_python_test.go (1,000 rounds against the real hub) and
test_closing.py (against a daemon).

    python3 python/tests/closing_server.py --socket S --port 100 --rounds 1000
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  this tree's homa_dpdk, built in place when stale

import numpy as np  # noqa: E402

import homa_dpdk  # noqa: E402


def pattern(rnd, i, size):
    """Reply i of round rnd."""
    return (np.arange(size, dtype=np.int64) * 7 + rnd * 3 + i).astype(np.uint8)


def main():
    ap = argparse.ArgumentParser(description="Answer calls and close at once, round after round.")
    ap.add_argument("--socket", default=homa_dpdk.DEFAULT_SOCKET, help="the daemon's control socket")
    ap.add_argument("--port", type=int, required=True, help="the first round's server port; round r binds port + r")
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=3, help="requests each round answers before it closes")
    ap.add_argument("--size", type=int, default=256 * 1024, help="bytes of each reply")
    args = ap.parse_args()
    for rnd in range(args.rounds):
        port = args.port + rnd
        with homa_dpdk.Client(args.socket) as c:
            c.bind(port)
            print(f"closing_server: bound {port}", flush=True)
            for _ in range(args.calls):
                with c.receive(timeout=30) as msg:
                    resp = pattern(rnd, msg.data[0], args.size)
                    if rnd % 2:
                        c.reply_async(msg, resp)
                    else:
                        c.reply(msg, resp)
    print("closing_server: done", flush=True)


if __name__ == "__main__":
    main()
