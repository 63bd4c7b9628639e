#!/usr/bin/env bash
# The README's first command: set up the machine, build homa-dpdk and run
# its embedded demo on virtual devices. Arguments go to `homa-dpdk demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
. scripts/lib/build.sh
go build -ldflags "$(homa_ldflags)" -o homa-dpdk ./cmd/homa-dpdk
exec ./homa-dpdk demo "$@"
