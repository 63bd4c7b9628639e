"""The single-producer single-consumer rings of shm/ring.go, from Python.

A ring's bytes: a 256-byte control block, then Entries slots of 64 bytes::

    off size field  written by   meaning
      0  8   tail   producer     entries ever pushed (free-running, wraps at 2^64)
    128  8   head   consumer     entries ever popped (free-running)
    136  4   wait   consumer     nonzero: the consumer is about to sleep; wake it
    256 ...  slots  producer     slot i holds the entry with index i mod Entries

As in Go, each end keeps its own index privately (the other process cannot
move it), caches the other end's index, and checks every load of it
(0 <= tail - head <= Entries, in wrapping arithmetic); a bad value is
counted in ``corrupt`` and ignored. Slot offsets are masked, so no index
value can reach outside the slots.

Memory ordering, and how this module ensures it
-----------------------------------------------
Python has no atomics. The Go side uses sequentially consistent atomics
(on amd64: a plain MOV load, an XCHG store). This module relies on the
x86-64 memory model (TSO: loads are not reordered with other loads,
stores not with other stores, nor stores with earlier loads; only a load
may pass an earlier store to another address) and on what CPython does for
each Python-level access:

* Every ring index is read and written through ``memoryview.cast('Q')`` of
  the control block, as ``ctl[0]`` (tail) and ``ctl[16]`` (head). CPython's
  memoryview item access for format 'Q' (Objects/memoryobject.c,
  ``pack_single``/``unpack_single``) converts the Python int and then does
  ``memcpy(ptr, &x, sizeof(unsigned long long))`` -- a constant 8-byte copy,
  which an optimising C compiler (release builds of CPython) emits as one
  8-byte MOV; even an out-of-line glibc memcpy moves 8 bytes with whole
  8-byte loads and stores. (CPython promises none of this; it is what the
  code does, which is why the package checks the machine and the
  interpreter rather than trusting it everywhere.) The address is 8-byte
  aligned (the mapping is page-aligned, every ring offset is a multiple of
  64, the index offsets are 0 and 128), and an aligned 8-byte access is
  single-copy atomic on x86-64: the other process sees the old or the new
  index, never a torn one.
* The slot bytes are written (memoryview slice assignment, a memcpy) or read
  (a slice copied out with ``tobytes``) by a statement that comes before
  the index store (producer) or after the index load (consumer) in program
  order. These are separate C calls made by the interpreter loop on memory
  the compiler must assume escapes, so the compiler keeps them in that
  order; and TSO keeps store->store (slot bytes, then tail) and load->load
  (tail, then slot bytes) and load->store (slot read, then head) orders.
  That gives the release/acquire pairs doc.go asks for.
* The one order TSO does not keep is a store followed by a load of another
  address. It matters once: a consumer going to sleep stores 1 in the wait
  flag and must then load the tail, while the engine stores the tail (XCHG,
  a full barrier) and then loads the flag. Without a barrier on our side
  both could read the old value and a wake-up would be lost. So
  ``Consumer.prepare_sleep`` stores the flag and then calls ``fence()``,
  which runs a locked read-modify-write instruction: glibc's
  ``pthread_spin_lock``/``pthread_spin_unlock`` on a private spinlock
  through ctypes (``lock`` prefixed on x86-64, a full barrier; POSIX lists
  both as memory-synchronising). Where that cannot be loaded the fallback
  is a ``threading.Lock`` acquire/release, which CPython implements with a
  locked instruction too. The fence is only on the sleep path, never per
  entry.

None of this holds on weakly ordered machines (arm64, ppc64, riscv) or on
an interpreter other than CPython, so ``check_platform()`` -- called by the
ring ends and by Client -- refuses to run there with UnsupportedPlatform
until a helper with real atomics exists.
"""

import platform
import threading

from .entry import ENTRY_SIZE
from .errors import RingGeometryError, UnsupportedPlatform
from .layout import MAX_RING_ENTRIES, RING_HEADER_SIZE, ring_bytes

__all__ = ["Producer", "Consumer", "init_ring", "fence", "check_platform", "MASK64"]

MASK64 = (1 << 64) - 1
_TAIL_Q = 0 // 8  # u64 index of the tail in the control block
_HEAD_Q = 128 // 8
_WAIT_I = 136 // 4  # u32 index of the wait flag

_X86_64 = {"x86_64", "amd64", "x64"}


def check_platform():
    """Raise UnsupportedPlatform unless this is CPython on x86-64 (see the
    module docstring for why)."""
    machine = platform.machine()
    if machine.lower() not in _X86_64:
        raise UnsupportedPlatform(
            f"homa_dpdk needs an x86-64 machine, this one is {machine!r}: its shared-memory rings rely on "
            "x86-64's total store order for the ordering of ring indices and slot bytes, and Python has no "
            "atomics; other machines need a helper with real atomics, which does not exist yet")
    impl = platform.python_implementation()
    if impl != "CPython":
        raise UnsupportedPlatform(
            f"homa_dpdk needs CPython, this is {impl}: it relies on CPython's memoryview doing one aligned "
            "8-byte store or load per ring index")


def _make_fence():
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        init, lock, unlock = libc.pthread_spin_init, libc.pthread_spin_lock, libc.pthread_spin_unlock
        for f in (init, lock, unlock):
            f.restype = ctypes.c_int
        init.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lock.argtypes = unlock.argtypes = [ctypes.c_void_p]
        cell = ctypes.create_string_buffer(64)  # pthread_spinlock_t is an int; a cache line of room
        if init(cell, 0) != 0:
            raise OSError("pthread_spin_init failed")

        def fence():
            lock(cell)
            unlock(cell)

        fence()
        fence.kind = "pthread_spin_lock"
        return fence
    except Exception:  # no ctypes, no such symbol: a lock's locked instruction
        mu = threading.Lock()

        def fence():
            mu.acquire()
            mu.release()

        fence.kind = "threading.Lock"
        return fence


fence = _make_fence()
fence.__doc__ = "A full memory barrier (a locked instruction on x86-64); see the module docstring."


def _ring_views(mem, entries):
    if not isinstance(entries, int) or entries <= 0 or entries & (entries - 1) or entries > MAX_RING_ENTRIES:
        raise RingGeometryError(f"homa_dpdk: bad ring geometry: {entries} entries")
    mv = memoryview(mem)
    if mv.readonly:
        raise RingGeometryError("homa_dpdk: ring memory is read-only")
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    if len(mv) != ring_bytes(entries):
        n = len(mv)
        mv.release()
        raise RingGeometryError(f"homa_dpdk: bad ring geometry: {n} bytes for {entries} entries, "
                                f"want {ring_bytes(entries)}")
    ctl = mv[:RING_HEADER_SIZE]
    return mv, ctl.cast("Q"), ctl.cast("I"), mv[RING_HEADER_SIZE:], ctl


class _End:
    """What both ends share: views of the memory and the corrupt counter."""

    def __init__(self, mem, entries):
        check_platform()
        self._mv, self._q, self._i, self._slots, self._ctl = _ring_views(mem, entries)
        self.size = entries
        self._mask = entries - 1
        self.corrupt = 0  # times the other end's index was out of range
        tail, head = self._q[_TAIL_Q], self._q[_HEAD_Q]
        if (tail - head) & MASK64 > entries:
            self.release()
            raise RingGeometryError(f"homa_dpdk: ring indices corrupt: tail {tail} head {head} "
                                    f"for {entries} entries")
        self._tail, self._head = tail, head

    def release(self):
        """Release the memoryviews of the ring (before the mapping closes)."""
        for v in (self._q, self._i, self._slots, self._ctl, self._mv):
            v.release()

    def _slot_off(self, i):
        return (i & self._mask) * ENTRY_SIZE


class Producer(_End):
    """The pushing end (the worker's end of the SQ). Its tail is private
    and authoritative; the consumer's head is checked on every load."""

    def _refresh(self):
        h = self._q[_HEAD_Q]
        if (self._tail - h) & MASK64 > self.size:
            self.corrupt += 1
            return
        self._head = h

    def push(self, slot):
        """Copy a 64-byte entry into the next slot and publish it (one
        8-byte store of the tail after the slot bytes). False if full."""
        if (self._tail - self._head) & MASK64 == self.size:
            self._refresh()
            if (self._tail - self._head) & MASK64 == self.size:
                return False
        if len(slot) != ENTRY_SIZE:
            raise ValueError(f"an entry is {ENTRY_SIZE} bytes, got {len(slot)}")
        off = self._slot_off(self._tail)
        self._slots[off:off + ENTRY_SIZE] = slot  # slot bytes first ...
        self._tail = (self._tail + 1) & MASK64
        self._q[_TAIL_Q] = self._tail  # ... then the tail: one aligned 8-byte store
        return True

    def __len__(self):
        """Entries pushed and not yet popped, as far as the head shows."""
        self._refresh()
        return (self._tail - self._head) & MASK64

    def free(self):
        return self.size - len(self)

    def consumer_waiting(self):
        """Whether the consumer said it is going to sleep (call after push)."""
        fence()  # our tail store before the flag load (see the module docstring)
        return self._i[_WAIT_I] != 0

    def take_waiter(self):
        """Clear the consumer's flag and report whether it was set. Not an
        atomic swap (Python has none): for the engine side of tests only."""
        if not self.consumer_waiting():
            return False
        self._i[_WAIT_I] = 0
        return True


class Consumer(_End):
    """The popping end (the worker's end of the CQ). Its head is private
    and authoritative; the producer's tail is checked on every load."""

    def _refresh(self):
        t = self._q[_TAIL_Q]
        if (t - self._head) & MASK64 > self.size:
            self.corrupt += 1
            return
        self._tail = t

    def pop(self):
        """Copy the oldest entry out of its slot and free the slot. Returns
        the 64 bytes (a private copy, safe to decode), or None if empty."""
        if self._tail == self._head:
            self._refresh()
            if self._tail == self._head:
                return None
        off = self._slot_off(self._head)
        out = self._slots[off:off + ENTRY_SIZE].tobytes()  # copy out first ...
        self._head = (self._head + 1) & MASK64
        self._q[_HEAD_Q] = self._head  # ... then free the slot
        return out

    def __len__(self):
        """Entries waiting to be popped."""
        self._refresh()
        return (self._tail - self._head) & MASK64

    def free(self):
        return self.size - len(self)

    def set_waiting(self, on):
        """Store the wait flag (u32 at offset 136)."""
        self._i[_WAIT_I] = 1 if on else 0

    def prepare_sleep(self):
        """Set the wait flag, fence, and recheck: True if the ring is still
        empty and the caller may sleep (it must clear the flag on waking),
        False if entries arrived (the flag is cleared again)."""
        self._i[_WAIT_I] = 1
        fence()  # the flag store must be visible before the tail load
        if len(self):
            self._i[_WAIT_I] = 0
            return False
        return True


def init_ring(mem, entries, start=0):
    """InitRing: a fresh control block with both indices at start and no
    waiter. The region's creator's job (daemon, tests); start near 2^64
    crosses the wrap."""
    mv, q, i, slots, ctl = _ring_views(mem, entries)
    try:
        ctl[:] = bytes(RING_HEADER_SIZE)
        q[_TAIL_Q] = start & MASK64
        q[_HEAD_Q] = start & MASK64
    finally:
        for v in (q, i, slots, ctl, mv):
            v.release()
