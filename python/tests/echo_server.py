#!/usr/bin/env python3
"""Echo server for the integration tests: binds --port through the daemon at
--socket and answers every request with the same bytes, until killed
(SIGTERM or SIGINT end it cleanly).

    python3 python/tests/echo_server.py --socket /run/homa-dpdk/workers.sock --port 99

It prints "echo_server: bound PORT" once it is ready.
"""

import argparse
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this tree's homa_dpdk

import homa_dpdk  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description="Reply to every request with its own bytes.")
    ap.add_argument("--socket", default=homa_dpdk.DEFAULT_SOCKET, help="the daemon's control socket")
    ap.add_argument("--port", type=int, required=True, help="server port to bind (1..32767)")
    ap.add_argument("--spin-us", type=float, default=50, help="spin before sleeping, microseconds")
    args = ap.parse_args()

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    served = 0
    with homa_dpdk.Client(args.socket, spin_us=args.spin_us) as c:
        c.bind(args.port)
        print(f"echo_server: bound {args.port}", flush=True)
        try:
            while True:
                with c.receive() as msg:
                    c.reply(msg, msg.data)
                served += 1
        finally:
            print(f"echo_server: served {served} requests; {c.stats()}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
