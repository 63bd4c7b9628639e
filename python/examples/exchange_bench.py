#!/usr/bin/env python3
"""Client CPU per request/response exchange: this tree's homa_dpdk (the
binding over libhoma) against the pure-Python client it replaced, in the
same run, interleaved.

Two Clients attach to the Go fake engine (shm/shmtest/cmd/shmfake, built
with go; tests/fakeengine.py), each in a process of its own: a server that
binds and echoes every request with receive() and reply_async(), and a
client that sends 100 bytes and waits for the response (send, wait; or,
with --window W > 1, or --detached, keeps W requests in flight with
send_async and takes the responses with receive). Each process counts its own CPU time, in user
space and in the kernel (getrusage), over a round of N exchanges; the
figure is CPU per exchange, each end and both together. Rounds alternate
between the two implementations; the tables show the median of the rounds,
one table per window and spin_us.

    python3 python/examples/exchange_bench.py [-n 5000] [--rounds 5] [--window 1 16] [--spin-us 0 50]

With spin_us 0 a wait sleeps at once, so the kernel's sleep and wake-up
show as system time; with spinning, the CPU also counts the spinning while
the other end works. The old client is taken from git (--old-rev; default:
the last commit whose python/homa_dpdk/ had the pure-Python ring code)
with git archive into a temporary directory; nothing in the checkout
changes.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.dirname(HERE)  # python/
REPO = os.path.dirname(PYROOT)


# ------------------------------------------------------------ the workers


def worker(args):
    """A server or client process: commands on stdin ("go N"), one answer
    line each on stdout ("user_ns sys_ns wall_ns": its CPU time in user
    space and in the kernel over those N exchanges, and the time they took)."""
    sys.path.insert(0, args.impl)
    import homa_dpdk

    c = homa_dpdk.Client(args.socket, spin_us=args.spin_us)
    if args.role == "server":
        c.bind(args.port)
    print("ready " + os.path.dirname(homa_dpdk.__file__), flush=True)
    addr = ("127.0.0.1", args.port)
    payload = bytes(args.size)
    for line in sys.stdin:
        n = int(line.split()[1])
        r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter_ns()
        if args.role == "server":
            for _ in range(n):
                m = c.receive()
                c.reply_async(m, m.data)
                m.release()
        elif args.window <= 1 and not args.detached:  # one exchange at a time: send, wait
            for _ in range(n):
                m = c.wait(c.send(addr, payload))
                m.release()
        else:  # window exchanges in flight (1 with --detached): send_async, and the responses through receive
            for _ in range(min(n, args.window)):
                c.send_async(addr, payload)
            for i in range(n):
                m = c.receive()
                m.release()
                if i + args.window < n:
                    c.send_async(addr, payload)
        r1, w1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter_ns()
        print(f"{int((r1.ru_utime - r0.ru_utime) * 1e9)} {int((r1.ru_stime - r0.ru_stime) * 1e9)} {w1 - w0}",
              flush=True)
    c.close()


# ------------------------------------------------------------ the driver


def old_tree(rev, dest):
    """python/homa_dpdk of rev, extracted under dest; returns the directory to put on sys.path."""
    if rev is None:
        have = subprocess.run(["git", "cat-file", "-e", "HEAD:python/homa_dpdk/ring.py"], cwd=REPO,
                              stderr=subprocess.DEVNULL).returncode == 0
        if have:
            rev = "HEAD"
        else:
            gone = subprocess.run(["git", "log", "-1", "--format=%H", "--", "python/homa_dpdk/ring.py"], cwd=REPO,
                                  capture_output=True, text=True, check=True).stdout.strip()
            rev = gone[:12] + "^"
    arch = subprocess.run(["git", "archive", "--format=tar", rev, "python/homa_dpdk"], cwd=REPO,
                          capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=arch, check=True)
    return os.path.join(dest, "python"), rev


class Pair:
    """A server and a client process of one implementation."""

    def __init__(self, name, impl, socket, spin_us, size, port, window, detached):
        self.name = name
        base = [sys.executable, os.path.abspath(__file__), "--worker", "--impl", impl, "--socket", socket,
                "--spin-us", str(spin_us), "--size", str(size), "--port", str(port), "--window", str(window)]
        if detached:
            base.append("--detached")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        self.server = subprocess.Popen(base + ["--role", "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True, env=env)
        self.where = self._ready(self.server)
        self.client = subprocess.Popen(base + ["--role", "client"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True, env=env)
        self._ready(self.client)

    @staticmethod
    def _ready(p):
        line = p.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"a worker did not start: {line!r}")
        return line.split(None, 1)[1].strip()

    def round(self, n):
        """Per exchange over n exchanges, in ns: (server user, server sys,
        client user, client sys, client wall)."""
        for p in (self.server, self.client):
            p.stdin.write(f"go {n}\n")
            p.stdin.flush()
        cu, cs, cw = map(int, self.client.stdout.readline().split())
        su, ss, _ = map(int, self.server.stdout.readline().split())
        return su / n, ss / n, cu / n, cs / n, cw / n

    def close(self):
        for p in (self.client, self.server):
            p.stdin.close()
        for p in (self.client, self.server):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=5000, help="exchanges per round")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per implementation, interleaved")
    ap.add_argument("--spin-us", type=float, nargs="+", default=[0, 50],
                    help="the Clients' spin_us; one table per value (0: sleep at once, so CPU is the cost of "
                         "the calls; 50: the default, which also counts the spinning while the other end works)")
    ap.add_argument("--size", type=int, default=100, help="request and response bytes")
    ap.add_argument("--window", type=int, nargs="+", default=[1, 16],
                    help="exchanges in flight; one table per value (1: send and wait, one at a time; more: "
                         "send_async and receive, so that waits mostly find work and the CPU is that of the calls)")
    ap.add_argument("--detached", action="store_true",
                    help="a window of 1 too with send_async and receive (no wait for the daemon's acceptance)")
    ap.add_argument("--old-rev", default=None, help="git revision of the pure-Python client")
    ap.add_argument("--no-old", action="store_true", help="measure this tree's binding only")
    # the worker side
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--impl", help=argparse.SUPPRESS)
    ap.add_argument("--socket", help=argparse.SUPPRESS)
    ap.add_argument("--role", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.spin_us, args.window = args.spin_us[0], args.window[0]
        return worker(args)

    sys.path.insert(0, os.path.join(PYROOT, "tests"))
    import fakeengine  # builds this tree's libraries in place too (support.py)
    from test_integration import start_process, stop_process

    if fakeengine.GO is None:
        sys.exit("exchange_bench: needs go (the fake engine is Go)")
    with tempfile.TemporaryDirectory(prefix="homa-bench-") as tmp:
        impls = [("binding", PYROOT)]
        if not args.no_old:
            old, rev = old_tree(args.old_rev, tmp)
            impls.append((f"pure Python ({rev})", old))
        sock = os.path.join(tmp, "homa.sock")
        engine = start_process(fakeengine.command(sock), "ready")
        try:
            port = 100
            for window in args.window:
                for spin in args.spin_us:
                    pairs = []
                    for name, impl in impls:
                        port += 1
                        pairs.append(Pair(name, impl, sock, spin, args.size, port, window, args.detached))
                    try:
                        res = measure(pairs, args)
                    finally:
                        for p in pairs:
                            p.close()
                    report(res, pairs, spin, window, args)
        finally:
            stop_process(engine)


def measure(pairs, args):
    """Rounds of each pair in turn, after a warm-up: {name: [round]}."""
    for p in pairs:
        p.round(min(args.n, 500))
    res = {p.name: [] for p in pairs}
    for _ in range(args.rounds):
        for p in pairs:
            res[p.name].append(p.round(args.n))
    return res


def report(res, pairs, spin, window, args):
    if window <= 1 and not args.detached:
        how = "send + wait, one at a time"
    else:
        how = f"{window} in flight (send_async + receive)"
    print(f"\n{args.size} B exchanges through the Go fake engine, {how}, spin_us={spin:g}; median of "
          f"{args.rounds} rounds of {args.n}; Python {sys.version.split()[0]}; CPU per exchange, us (user+sys)")
    print(f"{'client':<30} {'server':>15} {'client':>15} {'both ends':>17} {'wall':>8}")
    both = {}
    for p in pairs:
        rs = res[p.name]

        def med(f):
            return statistics.median(f(r) for r in rs) / 1e3

        b = med(lambda r: r[0] + r[1] + r[2] + r[3])
        bu = med(lambda r: r[0] + r[2])
        bs = med(lambda r: r[1] + r[3])
        w = med(lambda r: r[4])
        both[p.name] = b
        cell = f"{med(lambda r: r[0]):.1f}+{med(lambda r: r[1]):.1f}"
        cell2 = f"{med(lambda r: r[2]):.1f}+{med(lambda r: r[3]):.1f}"
        print(f"{p.name:<30} {cell:>15} {cell2:>15} {f'{bu:.1f}+{bs:.1f}={b:.1f}':>17} {w:>8.1f}")
    if len(both) == 2:
        a, b = list(both.values())
        print(f"both ends' CPU, binding over pure Python: {a / b:.3f}x")


if __name__ == "__main__":
    main()
