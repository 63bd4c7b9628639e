# shellcheck shell=bash
# Sourced by the scripts that run homa-dpdk, from the repository's root:
# the set-up (scripts/setup.sh: packages, hugepages), Go on PATH, and
# ./homa-dpdk built and stamped with its commit (build.sh).
bash scripts/setup.sh
. scripts/env.sh
. scripts/lib/build.sh
go build -ldflags "$(homa_ldflags)" -o homa-dpdk ./cmd/homa-dpdk
