"""The torch backend's waiting next to a busy thread (issue 41).

A waiting rank looks for its message and yields the CPU between looks
for HOMA_DPDK_TORCH_YIELD_US (100 µs) before it sleeps in libhoma. When
the rank shares its CPU with a thread that keeps the CPU (the daemon's
busy-polling loop on a small machine, where the scheduler put a rank on
the loop's core for whole phases of a job), a yield hands that thread the
rest of its time slice, a millisecond or more, and every wait paid it: a
2-rank all_reduce of 4 B took 1-2 ms instead of tens of µs for as long as
the rank stayed there. A yield that loses the CPU for 1 ms or more now
counts in pg.stats()["yields_lost"] and makes the waits of the next
back-off (5 ms, doubling while it happens again, up to
HOMA_DPDK_TORCH_YIELD_BACKOFF_US, 100 ms) on that CPU sleep in libhoma at
once, from which the message wakes the rank.

The check counts, not times: two ranks and a busy loop pinned to one
CPU, the fake engine on the others. With HOMA_DPDK_TORCH_YIELD_BACKOFF_US=0
(the behaviour before) a yield loses the CPU on most waits (the test's
premise; it skips where this machine's scheduler does not do that); with
the default, at most once per back-off, whatever the machine's speed.

Needs Go (the fake engine), a Python with torch (this one or Debian's
/usr/bin/python3; the extension is built for it in place, nothing when
it is up to date) and two CPUs; skips otherwise.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

import support  # noqa: F401  (sys.path: this tree's homa_dpdk)
from fakeengine import FakeEngine, need_go

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = 300
BACKOFF_S = 0.1  # HOMA_DPDK_TORCH_YIELD_BACKOFF_US's default: the longest back-off
RAMP = 5  # back-offs of 5, 10, 20, 40 and 80 ms before it


def torch_python():
    """An interpreter with torch: this one, or Debian's."""
    for p in (sys.executable, "/usr/bin/python3"):
        if p and os.access(p, os.X_OK) and subprocess.run([p, "-c", "import torch.distributed"],
                                                          capture_output=True).returncode == 0:
            return p
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(cpus):
    return lambda: os.sched_setaffinity(0, cpus)


@need_go
class TorchYieldTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not hasattr(os, "sched_setaffinity"):
            raise unittest.SkipTest("no sched_setaffinity here")
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise unittest.SkipTest("needs two CPUs: one for the ranks and a busy thread, one for the engine")
        cls.cpu, cls.others = {cpus[-1]}, set(cpus[:-1])
        cls.python = torch_python()
        if cls.python is None:
            raise unittest.SkipTest("no Python with torch (Debian: apt-get install python3-torch)")
        r = subprocess.run([cls.python, os.path.join(support.ROOT, "_build", "torch_ext.py"), "--inplace"],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise AssertionError("building the torch extension failed:\n" + r.stdout + r.stderr)
        probe = subprocess.run([cls.python, "-c", "import homa_dpdk.torch"], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=support.ROOT))
        if probe.returncode != 0:
            raise unittest.SkipTest("homa_dpdk.torch does not import: " + probe.stderr.strip().splitlines()[-1])
        cls.dir = tempfile.mkdtemp(prefix="homa-torch-yield-")
        saved = os.sched_getaffinity(0)
        os.sched_setaffinity(0, cls.others)  # the engine's threads (inherited) stay off the ranks' CPU
        try:
            cls.engine = FakeEngine(os.path.join(cls.dir, "127.0.0.1.sock"), arena_size=16 << 20,
                                    pool_pages=256).start()
        finally:
            os.sched_setaffinity(0, saved)
        cls.hog = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pinned(cls.cpu))

    @classmethod
    def tearDownClass(cls):
        cls.hog.kill()
        cls.hog.wait()
        cls.engine.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def job(self, **env):
        """Two ranks of torch_yield.py pinned to the busy thread's CPU; each
        rank's JSON line."""
        port = free_port()
        procs = []
        for rank in range(2):
            e = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank),
                     LOCAL_RANK=str(rank), HOMA_DPDK_SOCKET_DIR=self.dir, PYTHONPATH=support.ROOT,
                     OMP_NUM_THREADS="1", YIELD_TEST_OPS=str(OPS), **env)
            procs.append(subprocess.Popen([self.python, os.path.join(HERE, "torch_yield.py")], env=e,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          preexec_fn=pinned(self.cpu)))
        out = []
        for p in procs:
            try:
                stdout, stderr = p.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                raise
            self.assertEqual(p.returncode, 0, stderr)
            out.append(json.loads(stdout.strip().splitlines()[-1]))
        return out

    def test_a_yield_that_loses_the_cpu_backs_off(self):
        before = self.job(HOMA_DPDK_TORCH_YIELD_BACKOFF_US="0")
        lost = [r["stats"]["yields_lost"] for r in before]
        if max(lost) < OPS // 4:
            self.skipTest(f"without the back-off a yield next to a busy thread lost the CPU on {lost} of {OPS} "
                          "operations: this scheduler does not hand it the CPU for long; nothing to check")
        after = self.job()
        for r in after:
            bound = RAMP + 1 + int(r["seconds"] / BACKOFF_S)
            self.assertLessEqual(
                r["stats"]["yields_lost"], bound,
                f"rank {r['rank']}: {r['stats']['yields_lost']} yields lost the CPU in {r['seconds']:.3f} s "
                f"({OPS} all_reduces): after one, waits must sleep in libhoma for a back-off instead of yielding "
                f"(without the back-off: {lost}, in {[round(b['seconds'], 3) for b in before]} s)")
        if os.environ.get("HOMA_TEST_VERBOSE"):
            print(f"\n  without back-off: yields lost {lost}, seconds {[round(b['seconds'], 3) for b in before]}; "
                  f"with: yields lost {[r['stats']['yields_lost'] for r in after]}, "
                  f"seconds {[round(r['seconds'], 3) for r in after]}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
