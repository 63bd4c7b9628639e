"""Kept only as the old import path of the protocol's numbers (codes.py),
for modules not yet moved to it (torch_transport.py). New code imports
homa_dpdk or homa_dpdk.codes."""

from .codes import COMP_FLAG_RELEASED, ENTRY_SIZE, MAX_SERVER_PORT, PAGE_SIZE, CompOp, ErrCode, Op, err_name  # noqa: F401
