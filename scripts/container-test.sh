#!/usr/bin/env bash
# Builds the homa-dpdk container image with podman and runs it with
# hugepages, on a machine with no Docker engine and no container registry
# (Debian 12, as root; apt and the Go module proxy reachable):
#
#  1. installs podman and debootstrap (iproute2, python3-yaml) when missing, reserves
#     2 MB hugepages and mounts hugetlbfs on /dev/hugepages when it can;
#  2. makes the base image localhost/debian:bookworm-slim with debootstrap
#     --variant=minbase, slimmed as the official image (podman import), unless
#     docker.io/library/debian:bookworm-slim is already in local storage;
#  3. makes the Go image localhost/homa-dpdk-go:<go version>-<go.sum hash>:
#     the host's Go (/usr/local/go) and a module cache holding exactly the
#     modules go.mod/go.sum name (from the host's cache, else GOPROXY);
#  4. podman build --pull=never --isolation=chroot --network=host with
#     GOPROXY=off: inside the build only Debian's apt repository is used;
#  5. checks the image is under 200 MB;
#  6. runs the image's entrypoint with /dev/hugepages mounted — with `podman
#     run` where the container runtime works here (crun, else runc: installed
#     when missing; ulimits lowered to what this machine allows), otherwise
#     from the image's filesystem through `podman mount` and chroot, in
#     private mount and network namespaces:
#       a. `demo --seconds 3` on hugepages: the RPC percentile table and the
#          "N RPCs in T s" line, exit 0;
#       b. the default command (`run` on /etc/homa-dpdk/homa.yaml: af_packet
#          on eth0) in a network namespace whose eth0 is a veth to a peer
#          namespace: the HEALTHCHECK passes, the peer pings the daemon's
#          10.0.0.1, the worker socket appears, SIGTERM stops it with exit 0;
#       c. `demo --workers` with the socket directory in a volume, and the
#          echo worker (server and client) in two more containers on that
#          volume: every RPC echoed byte for byte;
#       d. deploy/k8s/start.sh, the Pod's command, with a fake SR-IOV VF:
#          the daemon takes the rendered config and the EAL arguments and
#          stops at the missing VF;
#  7. checks deploy/k8s: the YAML parses, and the Pod matches the image and
#     the config (socket volume, hugepages, probes = HEALTHCHECK, ConfigMap).
#
# Environment: HOMA_CONTAINER_MODE=auto|podman|chroot (default auto: podman
# run when it works), HOMA_IMAGE (default localhost/homa-dpdk:latest),
# HOMA_DEBIAN_MIRROR (default: this machine's apt source), HOMA_KEEP=1 keeps
# the test containers, namespaces and volume for a look afterwards.
# Logs go to /var/tmp/homa-container-test/. Safe to run again: what exists
# is reused (base and Go images, build layers).
#
# The steps are in scripts/lib/container-test/: host.sh (1), images.sh (2-5),
# runner.sh (running the image, 6), cases.sh (6a-6d, 7) and check_k8s.py (7).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
T0=$(date +%s)
LIB=scripts/lib/container-test
# shellcheck source=scripts/lib/container-test/host.sh
. "$LIB/host.sh"
# shellcheck source=scripts/lib/container-test/images.sh
. "$LIB/images.sh"
# shellcheck source=scripts/lib/container-test/runner.sh
. "$LIB/runner.sh"
# shellcheck source=scripts/lib/container-test/cases.sh
. "$LIB/cases.sh"

say() { printf 'container-test: %s\n' "$*"; }
fail() {
	say "FAILED: $*"
	exit 1
}
since() { echo "$(($(date +%s) - $1)) s"; }

IMAGE=${HOMA_IMAGE:-localhost/homa-dpdk:latest}
MODE=${HOMA_CONTAINER_MODE:-auto}
MAX_BYTES=200000000 # the image must stay under 200 MB
WORK=/var/tmp/homa-container-test
NS=homa-ct          # the daemon's network namespace (its eth0)
PEER_NS=homa-ct-peer
VOLUME=homa-ct-sockets
HUGE_WANT=256 # free 2 MB pages wanted (the demo and the daemon use < 100)

case $MODE in auto | podman | chroot) ;; *) fail "HOMA_CONTAINER_MODE=$MODE: want auto, podman or chroot" ;; esac
[ "$(id -u)" = 0 ] || fail "run as root: podman builds, hugepages, network namespaces and chroot need it"
mkdir -p "$WORK"
exec 9>"$WORK/lock"
flock -n 9 || fail "another container-test is running (lock $WORK/lock)"
rm -rf /var/tmp/homa-ct-rootfs.* /var/tmp/homa-ct-go.* # an interrupted run's

setup_host
base_image
go_image
build_image
check_size
pick_runner
read_image_config
start_runs
case_version
case_demo
case_daemon
case_workers
case_k8s
check_manifests

say "PASSED ($use mode, image $IMAGE $(awk -v s="$size" 'BEGIN{printf "%.1f MB", s/1e6}')) in $(since "$T0")"
