"""The receive pool's pages: those the daemon handed this worker (held)
and their return (OpReturnPages) once no view of a message is left.
PoolPages is a part of Client (client.py), which sets up the state it
uses.
"""

import ctypes
import os
import weakref

from .entry import PAGE_SIZE, Op, Submission
from .message import Message
from .pending import _RETURN_TAG

__all__ = ["PoolPages"]


class PoolPages:
    """Client's pool-page bookkeeping: held pages, messages over them,
    deferred returns."""

    def _pages_free(self, c):
        return self._held.find(1, c.page, c.page + c.pages) == -1

    def _mark(self, page, pages):
        self._held[page:page + pages] = b"\x01" * pages
        self._held_count += pages

    def _new_message(self, c, is_request):
        """A Message over pages [c.page, +c.pages). Its data is a view of a
        ctypes array made over those pages: every buffer derived from data
        (slices, np.frombuffer) keeps that array alive, and a weak
        reference to it tells when the last one is gone: then the pages
        are returned."""
        self._mark(c.page, c.pages)
        typ = self._block_types.get(c.pages)
        if typ is None:
            typ = self._block_types[c.pages] = ctypes.c_ubyte * (c.pages * PAGE_SIZE)
        block = typ.from_buffer(self._mm, self.layout.pool_offset + c.page * PAGE_SIZE)
        wr = weakref.ref(block, self._block_gone)
        self._blocks[id(wr)] = (wr, c.page, c.pages)
        with memoryview(block) as mv, mv.cast("B") as b:
            data = b[:c.length].toreadonly()
        return Message(self, c, is_request, data)

    def _block_gone(self, wr):
        """Weakref callback, from whichever thread dropped the last view:
        only queue the return."""
        rec = self._blocks.pop(id(wr), None)
        if rec is not None and not self._closed:
            self._deferred.append((rec[1], rec[2]))

    def _return_later(self, page, pages):
        self._deferred.append((page, pages))

    def _give_back(self):
        """After Message.release: return what is queued now, or, if another
        thread holds the client in a wait, wake that wait to do it."""
        if self._closed or self._dead or not self._deferred:
            return
        if self._lock.acquire(blocking=False):
            try:
                if not self._closed:
                    self._flush_returns()
            finally:
                self._lock.release()
        else:
            try:
                os.write(self._efd, (1).to_bytes(8, "little"))
            except OSError:
                pass

    def _flush_returns(self):
        if self._flushing or not self._deferred:
            return
        self._flushing = True
        try:
            while self._deferred:
                page, pages = self._deferred.popleft()
                if self._held.find(0, page, page + pages) != -1:
                    self._stats["bad_returns"] += 1  # not all held: never expected
                    continue
                slot = Submission(op=Op.RETURN_PAGES, cookie=_RETURN_TAG | page << 32 | pages, page=page,
                                  pages=pages).encode()
                try:
                    self._push(slot)
                except BaseException:
                    self._deferred.appendleft((page, pages))
                    raise
                self._held[page:page + pages] = bytes(pages)
                self._held_count -= pages
                self._stats["page_returns"] += 1
        finally:
            self._flushing = False
