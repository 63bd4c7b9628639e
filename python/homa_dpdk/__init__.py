"""homa_dpdk: the worker side of the homa-dpdk daemon's shared-memory interface.

    import homa_dpdk
    with homa_dpdk.Client("/run/homa-dpdk/workers.sock") as c:
        with c.call(("10.0.0.2", 99), b"hello", timeout=5.0) as msg:
            print(bytes(msg.data))

A thin binding (_native, the CPython C API) over libhoma, the worker
protocol's one C implementation (native/include/homa.h), shipped in the
package as libhoma.so.1. The protocol is the Go package shm/'s
(layout.go, ring.go, entry.go), its source of truth.
"""

from .client import DEFAULT_SOCKET, Client, Message
from .codes import COMP_FLAG_RELEASED, ENTRY_SIZE, PAGE_SIZE, CompOp, ErrCode, Op
from .errors import (ArenaFull, AttachError, BadEntry, HomaError, LayoutError, RefusedError, RingGeometryError,
                     RPCError, UnsupportedPlatform, WaitTimeout)
from .layout import Layout, parse_header

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Message",
    "DEFAULT_SOCKET",
    "HomaError",
    "AttachError",
    "RefusedError",
    "LayoutError",
    "RingGeometryError",
    "UnsupportedPlatform",
    "WaitTimeout",
    "RPCError",
    "BadEntry",
    "ArenaFull",
    "ErrCode",
    "Op",
    "CompOp",
    "COMP_FLAG_RELEASED",
    "ENTRY_SIZE",
    "PAGE_SIZE",
    "Layout",
    "parse_header",
]
