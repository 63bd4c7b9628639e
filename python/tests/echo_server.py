#!/usr/bin/env python3
"""Echo server for the integration tests: binds --port through the daemon at
--socket and answers every request with the same bytes, until killed
(SIGTERM or SIGINT end it cleanly). Requests to --port are answered with
reply; requests to --async-port (default --port + 1; 0: none) with
reply_async, whose refusals (the client gave up) come back through receive
and are counted, not fatal.

    python3 python/tests/echo_server.py --socket /run/homa-dpdk/workers.sock --port 99

It prints "echo_server: bound PORT" once it is ready.
"""

import argparse
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402,F401  this tree's homa_dpdk, built in place when stale

import homa_dpdk  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description="Reply to every request with its own bytes.")
    ap.add_argument("--socket", default=homa_dpdk.DEFAULT_SOCKET, help="the daemon's control socket")
    ap.add_argument("--port", type=int, required=True, help="server port to bind (1..32767), answered with reply")
    ap.add_argument("--async-port", type=int, default=None,
                    help="server port answered with reply_async (default: --port + 1 when that is a server port; "
                         "0: none)")
    ap.add_argument("--spin-us", type=float, default=50, help="spin before sleeping, microseconds")
    args = ap.parse_args()
    async_port = args.async_port
    if async_port is None:
        async_port = args.port + 1 if args.port < 0x7FFF else 0

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    served = refused = 0
    with homa_dpdk.Client(args.socket, spin_us=args.spin_us) as c:
        c.bind(args.port)
        if async_port:
            c.bind(async_port)
        print(f"echo_server: bound {args.port} (reply), {async_port or 'no port'} (reply_async)", flush=True)
        try:
            while True:
                try:
                    msg = c.receive()
                except homa_dpdk.RPCError:  # a reply_async refused: its RPC had ended
                    refused += 1
                    continue
                with msg:
                    if msg.port == async_port:
                        c.reply_async(msg, msg.data)
                    else:
                        c.reply(msg, msg.data)
                served += 1
        finally:
            print(f"echo_server: served {served} requests, {refused} async replies refused; {c.stats()}",
                  file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
