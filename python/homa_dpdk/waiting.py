"""Waiting: process completions until a condition holds, spinning on the
completion ring first and then sleeping on the eventfd (doc.go,
"Waiting"), and noticing when the daemon ends the session. Waiter is a
part of Client (client.py), which sets up the state it uses.
"""

import math
import os
import select
import time

from .errors import HomaError

__all__ = ["Waiter"]


class Waiter:
    """Client's wait loop."""

    def _wait_for(self, pred, timeout):
        """Process completions until pred() or timeout (None: no limit):
        spin for spin_us, then sleep on the eventfd (doc.go, "Waiting")."""
        deadline = None if timeout is None else time.perf_counter_ns() + max(0, int(timeout * 1e9))
        while True:
            self._flush_returns()
            self._drain()
            if pred():
                return True
            now = time.perf_counter_ns()
            if deadline is not None and now >= deadline:
                return False
            if self._dead:
                raise HomaError(f"homa_dpdk: the session has ended: {self._dead}")
            if self._closing:
                raise HomaError("homa_dpdk: the client was closed during the wait")
            if self._woken:  # wake(): return as at the deadline
                self._woken = False
                return False
            end = now + self._spin_ns
            if deadline is not None and deadline < end:
                end = deadline
            cq = self._cq
            arrived = False
            while time.perf_counter_ns() < end:
                if len(cq):
                    arrived = True
                    break
            if arrived:
                self._stats["spins"] += 1
                continue
            if deadline is not None and time.perf_counter_ns() >= deadline:
                continue  # one last look, then False
            self._sleep(deadline)

    def _sleep(self, deadline):
        cq = self._cq
        if not cq.prepare_sleep():  # flag = 1, fence, recheck the tail
            return
        self._stats["sleeps"] += 1
        events = []
        try:
            if deadline is None:
                ms = self._max_sleep_ms
            else:
                ms = min(self._max_sleep_ms, max(1, math.ceil((deadline - time.perf_counter_ns()) / 1e6)))
            events = self._poller.poll(ms)
            for fd, ev in events:
                if fd == self._efd:
                    try:
                        os.read(self._efd, 8)
                        self._stats["wakeups"] += 1
                    except BlockingIOError:
                        pass
        finally:
            cq.set_waiting(False)
        for fd, ev in events:
            if fd != self._efd:
                self._check_control(ev)

    def _check_control(self, ev):
        try:
            data = self._sock.recv(256)
        except BlockingIOError:
            data = None
        except OSError as e:
            data = b""
            ev = e
        if data == b"" or (data is None and ev & (select.POLLHUP | select.POLLERR)):
            self._dead = "the daemon closed the control connection (it exited, or ended this worker)"
            raise HomaError(f"homa_dpdk: the session has ended: {self._dead}")
