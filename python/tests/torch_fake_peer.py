"""A 2-rank job of the PyTorch backend whose rank 0 is a fake: a Python
process that registers its own creator for "homa" (so it sees the job's
store as the real backend does), publishes an entry in the store, takes
part in rank 1's set-up barrier, and then sends rank 1 parts in the
backend's framing, crafted, through homa_dpdk.Client sessions of its own on
its host. Rank 1 is the real backend. Run by demo's
TestTorch_fakePeer* tests, with one mode as argument:

  dup       rank 0 sends each of two 256-byte messages as three parts, the
            first twice: to a receive posted already (tag 9), and before
            the receive is posted (tag 10); then a 320-byte message in 64-byte
            parts out of order, one twice (tag 12). Rank 1 must receive each
            whole (the copies dropped and counted in "dropped_duplicate"),
            not finish at a copy with part of the tensor never written.
  overlap   parts [0, 128) and [64, 192) of a 256-byte message: rank 1's
            receive must fail naming rank 0, not finish with a hole.
  lengths   two parts of one message claiming 32 and 16 bytes, before rank
            1 posts a 16-byte receive (a view of the first 16 bytes of a
            32-byte tensor): it must fail naming rank 0, not write past the
            view's end.
  badentry  rank 0's entry in the store has a port that is not a number:
            rank 1's set-up must fail naming rank 0, and rank 1's output
            must not hold rank 0's key (BAD_KEY).

Rank 1 prints "rank 1: MODE passed: ..." and exits 0, or raises; rank 0
prints "rank 0: fake: ..." lines (in badentry mode it waits to be killed)."""

import datetime
import os
import random
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import homa_dpdk  # noqa: E402
import homa_dpdk.torch  # noqa: E402,F401

MAGIC = 0x484F4D41
BAD_KEY = 0x5EC7E75EC7E75EC7  # the fake's key in badentry mode: no output of rank 1 may hold it


def header(tag, seq, offset, total, key, src=0):
    """The backend's part header (transport.hpp)."""
    return struct.pack("<IIqQQQQ", MAGIC, src, tag, seq, offset, total, key)


def job_store():
    """The store the backend's creator was given, as rank 1 sees it."""
    c10d = dist.distributed_c10d
    return dist.PrefixStore(c10d._pg_names[c10d._get_default_group()], c10d._get_default_store())


class FakeRank0:
    """Rank 0 of the job, by hand: a server session (its bound port
    published, answering every request with one byte from a thread) and
    a client session that sends the crafted parts."""

    def __init__(self, store, size, mode):
        self.store, self.size, self.mode = store, size, mode
        dirn = os.environ.get("HOMA_DPDK_SOCKET_DIR", "/run/homa-dpdk/demo")
        hosts = sorted((f for f in os.listdir(dirn) if f.endswith(".sock")),
                       key=lambda f: tuple(int(x) for x in f[:-5].split(".")))
        path = os.path.join(dirn, hosts[0])
        self.ip = hosts[0][:-5]
        self.key = BAD_KEY if mode == "badentry" else random.getrandbits(64)
        self.server = homa_dpdk.Client(path, spin_us=0)
        self.port = 1000
        while True:
            try:
                self.server.bind(self.port)
                break
            except homa_dpdk.HomaError:
                self.port += 1
        self.sender = homa_dpdk.Client(path, spin_us=0)
        self.requests = 0
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop:
            try:
                msg = self.server.receive(0.1)
            except homa_dpdk.HomaError:
                continue  # a timeout, or a refused reply
            with msg:
                if msg.is_request:
                    self.server.reply(msg, b"\0")
                    self.requests += 1

    def publish(self):
        """Publish rank 0's entry in the form rank 1's own has (its fields
        after "ip:port:key", the world size, taken from there)."""
        v = self.store.get("homa_dpdk/1").decode()
        fields = v.split(":")
        self.ip1, self.port1 = fields[0], int(fields[1])
        port = "http" if self.mode == "badentry" else str(self.port)
        entry = ":".join([self.ip, port, f"{self.key:016x}"] + [str(self.size)] * (len(fields) - 3))
        self.store.set("homa_dpdk/0", entry)

    def send(self, tag, seq, offset, total, payload=b"", fails=False):
        """One part to rank 1, waited for until rank 1 answered it (so it
        has taken it). fails: the part may fail rank 1's group, which then
        answers nothing more: an answer is waited for 3 s at most."""
        rpc = self.sender.send((self.ip1, self.port1), header(tag, seq, offset, total, self.key) + payload)
        try:
            with self.sender.wait(rpc, 3.0 if fails else 20.0):
                pass
        except homa_dpdk.HomaError:
            if not fails:
                raise
            self.sender.abort(rpc)


class FakePG(dist.ProcessGroup):
    def getBackendName(self):
        return "homa"


FAKE = {}


def fake_create(store, rank, size, timeout):
    """Rank 0's creator for "homa": the fake's set-up."""
    mode = sys.argv[1]
    fake = FakeRank0(store, size, mode)
    fake.publish()
    print(f"rank 0: fake: published on {fake.ip}:{fake.port}", flush=True)
    if mode == "badentry":
        while True:  # rank 1 fails in its set-up: nothing more to do here
            time.sleep(1)
    fake.send(-1, 0, 0, 0)  # rank 1's set-up barrier (the first collective: tag -1)
    FAKE["rank0"] = fake
    return FakePG(rank, size)


def fake_rank0(mode):
    dist.Backend._plugins.pop("HOMA", None)  # homa_dpdk.torch's registration: this rank's is the fake's
    delattr(dist.Backend, "HOMA")
    dist.Backend.register_backend("homa", fake_create)
    dist.init_process_group("homa", timeout=datetime.timedelta(seconds=60))
    fake, store = FAKE["rank0"], job_store()
    data = torch.arange(64, dtype=torch.float32).numpy().tobytes()
    if mode == "dup":
        store.wait(["fake/posted9"])
        for off in (0, 0, 128):
            fake.send(9, 0, off, 256, data[off:off + 128])
        for off in (0, 0, 128):
            fake.send(10, 0, off, 256, data[off:off + 128])
        store.set("fake/sent10", "1")
        store.wait(["fake/posted12"])
        data = torch.arange(80, dtype=torch.float32).numpy().tobytes()
        for off in (128, 256, 192, 0, 256, 64):  # out of order, each kind of gap and join, one copy
            fake.send(12, 0, off, 320, data[off:off + 64])
    elif mode == "overlap":
        store.wait(["fake/posted9"])
        fake.send(9, 0, 0, 256, data[:128])
        fake.send(9, 0, 64, 256, data[64:192], fails=True)
    elif mode == "lengths":
        fake.send(11, 0, 16, 32, data[16:32])
        fake.send(11, 0, 0, 16, data[:16], fails=True)
        store.set("fake/sent11", "1")
    store.wait(["fake/done"])
    print(f"rank 0: fake: {mode} sent; {fake.requests} requests answered", flush=True)
    fake.stop = True
    fake.thread.join()
    os._exit(0)  # the dummy group has nothing to shut down


def real_rank1(mode):
    if mode == "badentry":
        try:
            dist.init_process_group("homa", timeout=datetime.timedelta(seconds=60))
        except RuntimeError as e:
            err = str(e)
            if f"{BAD_KEY:016x}" in err:
                raise AssertionError(f"rank 1: the error holds rank 0's key: {err}") from None
            if "rank 0" not in err:
                raise AssertionError(f"rank 1: the error does not name rank 0: {err}") from None
            print(f"rank 1: badentry passed: {err}", flush=True)
            return
        raise AssertionError("rank 1: joined a job whose rank 0 published a malformed entry")
    dist.init_process_group("homa", timeout=datetime.timedelta(seconds=60))
    store, pg = job_store(), dist.distributed_c10d._get_default_group()
    want = torch.arange(64, dtype=torch.float32)
    try:
        if mode == "dup":
            t = torch.full((64,), -1.0)
            w = dist.irecv(t, 0, tag=9)
            store.set("fake/posted9", "1")
            w.wait()
            if not torch.equal(t, want):
                raise AssertionError(f"rank 1: tag 9 (a receive posted first) finished with a hole: "
                                     f"{int((t != want).sum())} of 64 elements never written")
            store.wait(["fake/sent10"])
            t = torch.full((64,), -1.0)
            dist.recv(t, 0, tag=10)
            if not torch.equal(t, want):
                raise AssertionError(f"rank 1: tag 10 (parts before the receive) finished with a hole: "
                                     f"{int((t != want).sum())} of 64 elements never written")
            t = torch.full((80,), -1.0)
            w = dist.irecv(t, 0, tag=12)
            store.set("fake/posted12", "1")
            w.wait()
            if not torch.equal(t, torch.arange(80, dtype=torch.float32)):
                raise AssertionError(f"rank 1: tag 12 (parts out of order) finished with a hole: "
                                     f"{int((t != torch.arange(80.)).sum())} of 80 elements never written")
            dups = pg.stats().get("dropped_duplicate")
            if dups != 3:
                raise AssertionError(f"rank 1: dropped_duplicate {dups}, not 3; stats {pg.stats()}")
            print(f"rank 1: dup passed: all three received whole; stats {pg.stats()}", flush=True)
        elif mode == "overlap":
            t = torch.full((64,), -1.0)
            w = dist.irecv(t, 0, tag=9)
            store.set("fake/posted9", "1")
            try:
                w.wait()
            except RuntimeError as e:
                if "rank 0" not in str(e) or "overlap" not in str(e):
                    raise AssertionError(f"rank 1: the error does not say rank 0's parts overlap: {e}") from None
                print(f"rank 1: overlap passed: {e}", flush=True)
                return
            raise AssertionError(f"rank 1: overlapping parts made a receive of "
                                 f"{int((t != want).sum())} elements never written")
        elif mode == "lengths":
            store.wait(["fake/sent11"])
            base = torch.full((8,), -1.0)
            view = base[:4]
            try:
                dist.recv(view, 0, tag=11)
            except RuntimeError as e:
                if "rank 0" not in str(e):
                    raise AssertionError(f"rank 1: the error does not name rank 0: {e}") from None
                if not torch.equal(base[4:], torch.full((4,), -1.0)):
                    raise AssertionError(f"rank 1: bytes written past the receive's tensor: {base}") from None
                print(f"rank 1: lengths passed: {e}", flush=True)
                return
            raise AssertionError(f"rank 1: a receive of parts that disagree on the length succeeded; "
                                 f"past its end: {base[4:]}")
    finally:
        store.set("fake/done", "1")


def main():
    mode = sys.argv[1]
    if int(os.environ["RANK"]) == 0:
        fake_rank0(mode)
    else:
        real_rank1(mode)


if __name__ == "__main__":
    main()
