#!/usr/bin/env python3
"""A parameter server and its worker over homa-dpdk, with numpy.

Server: holds a float32 parameter vector; answers "pull" with the vector
and applies "push" gradients (params -= lr * grad).

    python3 param_server.py --role server --socket /run/homa-dpdk/workers.sock --port 5000

Worker: for each step pulls the parameters, computes a fake gradient (of
0.5 * |params - target|^2, scaled by a step-dependent factor), pushes it,
and prints the step's round-trip times; at the end it pulls once more and
prints a checksum line. Everything is deterministic: against a freshly
started server, the same --steps and --dim give the same checksum line.

    python3 param_server.py --role worker --socket /run/homa-dpdk/workers.sock --server 10.0.0.2:5000 --steps 20

Messages are a 32-byte header and a float32 array:

    off size  field
      0  4    magic  b"HPS1"
      4  2    op     1 pull, 2 push, 3 params (reply to pull), 4 ack (reply to push), 5 error
      6  2    zero
      8  4    count  float32 values after the header
     12  8    step   pull/push: the worker's step; params/ack: the server's version (pushes applied)
     20 12    zero
"""

import argparse
import hashlib
import os
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # this tree's homa_dpdk

try:
    import numpy as np
except ImportError:
    sys.exit("param_server.py needs numpy (Debian: apt-get install python3-numpy)")

import homa_dpdk  # noqa: E402

HDR = struct.Struct("<4sHHIQ12x")
assert HDR.size == 32
MAGIC = b"HPS1"
PULL, PUSH, PARAMS, ACK, ERROR = 1, 2, 3, 4, 5
LR = np.float32(0.1)


def initial_params(dim):
    return np.linspace(-1.0, 1.0, dim, dtype=np.float32)


def target(dim):
    return np.sin(np.arange(dim, dtype=np.float32) * np.float32(0.01)).astype(np.float32)


def header(data):
    """(op, count, step) of a message, or None if it is not one of ours."""
    if len(data) < HDR.size:
        return None
    magic, op, _zero, count, step = HDR.unpack_from(data)
    if magic != MAGIC or len(data) != HDR.size + 4 * count:
        return None
    return op, count, step


def serve(args):
    dim = args.dim
    reply = bytearray(HDR.size + 4 * dim)  # header + parameters, sent as is: no concatenation per pull
    params = np.frombuffer(reply, dtype=np.float32, offset=HDR.size)
    params[:] = initial_params(dim)
    small = bytearray(HDR.size)
    version = 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with homa_dpdk.Client(args.socket, spin_us=args.spin_us) as c:
        c.bind(args.port)
        print(f"param_server: serving {dim} float32 parameters on port {args.port}", flush=True)
        try:
            while True:
                with c.receive() as msg:
                    h = header(msg.data)
                    if h is not None and h[0] == PULL and h[1] == 0:
                        HDR.pack_into(reply, 0, MAGIC, PARAMS, 0, dim, version)
                        c.reply(msg, reply)
                    elif h is not None and h[0] == PUSH and h[1] == dim:
                        grad = np.frombuffer(msg.data, dtype=np.float32, count=dim, offset=HDR.size)
                        params -= LR * grad  # straight from the receive pool
                        del grad
                        version += 1
                        HDR.pack_into(small, 0, MAGIC, ACK, 0, 0, version)
                        c.reply(msg, small)
                    else:
                        HDR.pack_into(small, 0, MAGIC, ERROR, 0, 0, version)
                        c.reply(msg, small)
        except KeyboardInterrupt:
            pass
        finally:
            print(f"param_server: {version} pushes applied", file=sys.stderr, flush=True)


def parse_server(s):
    ip, _, port = s.rpartition(":")
    if not ip or not port.isdigit():
        raise argparse.ArgumentTypeError(f"want IP:PORT, got {s!r}")
    return ip, int(port)


def work(args):
    dim = args.dim
    goal = target(dim)
    push = bytearray(HDR.size + 4 * dim)
    grad = np.frombuffer(push, dtype=np.float32, offset=HDR.size)  # the gradient is computed in place
    pull_pkt = bytearray(HDR.size)

    def do_pull(c, step):
        HDR.pack_into(pull_pkt, 0, MAGIC, PULL, 0, 0, step)
        with c.call(args.server, pull_pkt, timeout=args.timeout) as m:
            h = header(m.data)
            if h is None or h[0] != PARAMS or h[1] != dim:
                sys.exit(f"param_server: bad answer to pull: {h} (is the server's --dim {dim}?)")
            return np.frombuffer(m.data, dtype=np.float32, count=dim, offset=HDR.size).copy(), h[2]

    with homa_dpdk.Client(args.socket, spin_us=args.spin_us) as c:
        rtts = []
        for step in range(args.steps):
            t0 = time.perf_counter_ns()
            params, version = do_pull(c, step)
            t1 = time.perf_counter_ns()
            scale = np.float32(1.0 + 0.1 * (step % 3 - 1))
            np.subtract(params, goal, out=grad)
            grad *= scale
            HDR.pack_into(push, 0, MAGIC, PUSH, 0, dim, step)
            with c.call(args.server, push, timeout=args.timeout) as m:
                h = header(m.data)
                if h is None or h[0] != ACK:
                    sys.exit(f"param_server: bad answer to push: {h}")
            t2 = time.perf_counter_ns()
            loss = 0.5 * float(np.sum(np.square(params - goal, dtype=np.float64)))
            rtts.append((t1 - t0, t2 - t1))
            print(f"step {step:4d} version {version:4d} pull_rtt_us {(t1 - t0) / 1e3:9.1f} "
                  f"push_rtt_us {(t2 - t1) / 1e3:9.1f} loss {loss:.6f}", flush=True)
        params, version = do_pull(c, args.steps)
        digest = hashlib.sha256(params.tobytes()).hexdigest()[:16]
        if rtts:
            pulls = sorted(r[0] for r in rtts)
            pushes = sorted(r[1] for r in rtts)
            print(f"median pull_rtt_us {pulls[len(pulls) // 2] / 1e3:.1f} "
                  f"push_rtt_us {pushes[len(pushes) // 2] / 1e3:.1f} "
                  f"({4 * dim} bytes of parameters each way)", flush=True)
        print(f"checksum {digest} sum {float(np.sum(params, dtype=np.float64)):.6f} version {version} "
              f"steps {args.steps} dim {dim}", flush=True)


def main():
    ap = argparse.ArgumentParser(description="Parameter server and worker over homa-dpdk (numpy).")
    ap.add_argument("--role", choices=("server", "worker"), required=True)
    ap.add_argument("--socket", default=homa_dpdk.DEFAULT_SOCKET, help="the daemon's control socket")
    ap.add_argument("--port", type=int, default=5000, help="server: the port to bind")
    ap.add_argument("--server", type=parse_server, help="worker: the server's IP:PORT")
    ap.add_argument("--steps", type=int, default=10, help="worker: training steps")
    ap.add_argument("--dim", type=int, default=65536, help="float32 parameters (both roles must agree)")
    ap.add_argument("--timeout", type=float, default=30.0, help="worker: seconds per call")
    ap.add_argument("--spin-us", type=float, default=50, help="spin before sleeping, microseconds")
    args = ap.parse_args()
    if args.role == "server":
        serve(args)
    else:
        if args.server is None:
            ap.error("--role worker needs --server IP:PORT")
        work(args)


if __name__ == "__main__":
    main()
