#!/usr/bin/env bash
# The README's first command: set up the machine, build homa-dpdk and run
# its embedded demo on virtual devices. Arguments go to `homa-dpdk demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/prepare.sh
exec ./homa-dpdk demo "$@"
