# shellcheck shell=bash
# Sourced by the scripts that run homa-dpdk, from the repository's root:
# the set-up (scripts/setup.sh: packages, hugepages), Go on PATH,
# ./homa-dpdk built and stamped with its commit (build.sh), and the Python
# package's libraries (libhoma and the binding) built in place for
# Debian's python3, which the scripts run with PYTHONPATH=$PWD/python, and
# the NCCL net plugin (nccl/build/libnccl-net-homa.so).
bash scripts/setup.sh
. scripts/env.sh
. scripts/lib/build.sh
go build -ldflags "$(homa_ldflags)" -o homa-dpdk ./cmd/homa-dpdk
/usr/bin/python3 python/_build/homa_build.py --inplace --quiet
make -s -C nccl
