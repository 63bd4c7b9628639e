# shellcheck shell=bash
# Sourced by the scripts that run homa-dpdk, from the repository's root:
# the set-up (scripts/setup.sh: packages, hugepages), Go on PATH,
# ./homa-dpdk built and stamped with its commit (build.sh), and the Python
# package's libraries (libhoma and the binding) built in place for
# Debian's python3, which the scripts run with PYTHONPATH=$PWD/python, and
# the NCCL net plugin (nccl/build/libnccl-net-homa.so), and perf cluster's
# ns-3 program for DCTCP and TCP (ns3/build/homa-ns3-tcp).
bash scripts/setup.sh
. scripts/env.sh
. scripts/lib/build.sh
go build -ldflags "$(homa_ldflags)" -o homa-dpdk ./cmd/homa-dpdk
/usr/bin/python3 python/_build/homa_build.py --inplace --quiet
make -s -C nccl
make -s -C ns3
