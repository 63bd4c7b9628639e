"""The fake engine of the Go package shm/shmtest, as a process: the real
control socket, rings and entries of the Go shm package on a loopback
host (every worker at one address), so the Python side is checked byte
for byte against the Go code. It is built once per test run with go
(shm/shmtest/cmd/shmfake); without Go (or with HOMA_SKIP_GO=1) the tests
that need it skip.

In a test (commands on the process's stdin, see shmfake's doc)::

    e = FakeEngine(path, pool_pages=16).start()
    ...
    e.pause(); e.resume(); e.refuse(True); e.kill(e.session(-1))
    e.session(-1).pages_held
    e.stop()

As a plain process (start_process)::

    command(path, "-echo", "7")
"""

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import threading
import unittest

import support
from homa_dpdk.layout import Layout

REPO = os.path.dirname(support.ROOT)
PACKAGE = "./shm/shmtest/cmd/shmfake"


def find_go():
    """The go command, if there is one and this tree has its go.mod."""
    if os.environ.get("HOMA_SKIP_GO"):
        return None
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go and os.path.exists(os.path.join(REPO, "go.mod")):
        return go
    return None


GO = find_go()
need_go = unittest.skipUnless(GO, "Go or the repository's go.mod not found (or HOMA_SKIP_GO set): "
                                  "the fake engine is Go (shm/shmtest)")
_built = {}
_build_lock = threading.Lock()


def binary():
    """The fake engine's executable, built on first use."""
    with _build_lock:
        if "bin" not in _built:
            d = tempfile.mkdtemp(prefix="homa-shmfake-")
            atexit.register(shutil.rmtree, d, True)
            out = os.path.join(d, "shmfake")
            env = dict(os.environ, CGO_ENABLED="0")
            r = subprocess.run([GO, "build", "-o", out, PACKAGE], cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=600)
            _built["bin"] = out if r.returncode == 0 else None
            _built["err"] = r.stderr
    if _built["bin"] is None:
        raise RuntimeError(f"go build {PACKAGE} failed:\n" + _built["err"])
    return _built["bin"]


def command(path, *flags):
    """The command line of a fake engine on socket path."""
    return [binary(), "-socket", path, *flags]


class Session:
    """One session of the engine, by its index (in attach order). Each
    attribute is asked of the engine when read: layout (a Layout),
    pages_held and pages_free (the engine's account of the receive pool),
    wakeups, submissions, bad_submissions, rpcs, port, live, sq_corrupt,
    cq_corrupt."""

    def __init__(self, engine, index):
        self.engine = engine
        self.index = index

    def info(self):
        return self.engine.call(f"session {self.index}")

    @property
    def layout(self):
        return Layout(**self.info()["layout"])

    def __getattr__(self, name):
        info = self.info()
        if name in info:
            return info[name]
        raise AttributeError(name)


def _index(s):
    return s.index if isinstance(s, Session) else int(s)


class FakeEngine:
    """The Go fake engine as a child process steered through its stdin."""

    def __init__(self, path, ip="127.0.0.1", sq_entries=256, cq_entries=1024, arena_size=4 << 20, pool_pages=128,
                 max_message=0, ring_start=0, release_mode="end", abort_ends_server=False, echo=(),
                 region_max_message=0):
        self.path = path
        self.flags = ["-ip", ip, "-sq", str(sq_entries), "-cq", str(cq_entries), "-arena", str(arena_size),
                      "-pool-pages", str(pool_pages), "-max-message", str(max_message),
                      "-region-max-message", str(region_max_message), "-ring-start",
                      str(ring_start), "-release", release_mode, "-v", "-control"]
        if abort_ends_server:
            self.flags.append("-abort-ends-server")
        for p in echo:
            self.flags += ["-echo", str(p)]
        self.proc = None
        self._lock = threading.Lock()

    def start(self):
        self._err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(command(self.path, *self.flags), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, bufsize=1)
        line = self.proc.stdout.readline()
        if "ready" not in line:
            self.stop()
            raise RuntimeError(f"the fake engine did not start: {line!r} {self.stderr()}")
        return self

    def stderr(self):
        self._err.seek(0)
        return self._err.read()

    def stop(self):
        if self.proc is None:
            return
        p, self.proc = self.proc, None
        try:
            p.stdin.close()  # the end of its commands: it exits
            p.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            p.kill()
            p.wait()
        p.stdout.close()
        self._err.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def call(self, line):
        """Send one command; return its answer (a dict)."""
        with self._lock:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the fake engine exited: {self.stderr()}")
        a = json.loads(answer)
        if "error" in a:
            raise RuntimeError(f"fake engine: {line.split()[0]}: {a['error']}")
        return a

    def pause(self):
        """Stop the engine; when this returns it reads and writes no ring."""
        self.call("pause")

    def resume(self):
        self.call("resume")

    def refuse(self, on=True):
        """Refuse ("refused\\n") every worker that attaches while on."""
        self.call("refuse on" if on else "refuse off")

    def session(self, i=-1):
        """Session i (negative: from the last attached)."""
        return Session(self, self.call(f"session {int(i)}")["index"])

    def sessions(self):
        """The number of sessions attached now."""
        return self.call("sessions")["attached"]

    def kill(self, s):
        """End session s from the daemon's side; returns once it has detached."""
        self.call(f"kill {_index(s)}")

    def inject(self, s, raw):
        """Push raw completion bytes (64) to session s: for tests of bad
        completions (queued while the engine is paused)."""
        self.call(f"inject {_index(s)} {bytes(raw).hex()}")

    def hold(self, s, pages):
        """Hand session s a run of pool pages, as a delivered message would,
        without a completion; returns its first page."""
        return self.call(f"hold {_index(s)} {int(pages)}")["page"]

    def script(self, port, code=None):
        """The engine answers port itself: echo (code None) or an ErrCode."""
        self.call(f"script {int(port)} {'echo' if code is None else int(code)}")
