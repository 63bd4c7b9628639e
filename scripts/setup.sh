#!/usr/bin/env bash
# Set-up for homa-dpdk on Debian 12: installs DPDK 22.11 (libdpdk-dev, and
# dpdk-dev for dpdk-testpmd), pkg-config and gcc, and the tools the tests
# use (tshark reads captures back, iproute2 and ping make test hosts in
# network namespaces) when missing, the compilers and headers the native
# parts build with (make, g++, python3-dev; libtorch-dev and pybind11-dev
# for the C++ torch backend; libns3-dev and libgsl-dev for ns3/'s program,
# perf cluster's DCTCP and TCP side), then reserves
# 2 MB hugepages and mounts hugetlbfs when the kernel allows. Where it
# cannot, homa-dpdk falls back to --no-huge by itself; this script says so.
# Safe to run again: it only does what is missing.
#
# HOMA_HUGEPAGES sets how many 2 MB pages to reserve (default 1024 = 2 GiB).
set -euo pipefail

say() { printf 'setup: %s\n' "$*"; }

root=yes
[ "$(id -u)" = 0 ] || root=no

# 1. Packages.
missing=()
pkgs=(libdpdk-dev dpdk-dev pkg-config gcc make tshark iproute2 iputils-ping
	python3 python3-dev python3-numpy python3-venv python3-pip python3-setuptools
	prometheus systemd groff-base python3-torch g++ libtorch-dev pybind11-dev
	libns3-dev libgsl-dev)
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	say "packages present: ${pkgs[*]}"
elif [ "$root" = yes ]; then
	say "installing ${missing[*]} ..."
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	say "installed ${missing[*]}"
else
	say "missing ${missing[*]}: run this script as root, or: sudo apt-get install -y ${missing[*]}"
	exit 1
fi
say "DPDK $(pkg-config --modversion libdpdk) ($(command -v dpdk-testpmd))"

# 2. Go (the build needs it; the machine image ships it in /usr/local/go).
if ! command -v go >/dev/null 2>&1; then
	if [ -x /usr/local/go/bin/go ]; then
		say "Go is in /usr/local/go/bin (not on PATH; the scripts add it)"
	else
		say "Go is not installed: homa-dpdk needs Go 1.26 (https://go.dev/dl/)"
		exit 1
	fi
fi

# 3. Hugepages.
want=${HOMA_HUGEPAGES:-1024}
nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
huge=no
if [ "$root" = no ]; then
	say "not root: hugepages untouched; homa-dpdk will use --no-huge unless they are already set up"
elif [ ! -e "$nr" ]; then
	say "this kernel offers no 2 MB hugepages: homa-dpdk will use --no-huge"
else
	cur=$(cat "$nr")
	if [ "$cur" -lt "$want" ]; then
		echo "$want" >"$nr" 2>/dev/null || true
		now=$(cat "$nr")
		say "2 MB hugepages: $cur reserved before, asked for $want, now $now"
	else
		say "2 MB hugepages: $cur reserved (wanted $want)"
	fi
	mkdir -p /dev/hugepages
	if grep -qs ' /dev/hugepages hugetlbfs ' /proc/mounts; then
		say "hugetlbfs already mounted on /dev/hugepages"
		huge=yes
	elif mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages 2>/dev/null; then
		say "mounted hugetlbfs on /dev/hugepages"
		huge=yes
	else
		say "could not mount hugetlbfs (a container without the right?): homa-dpdk will use --no-huge"
	fi
fi
if [ "$huge" = yes ]; then
	# Free pages that another process has reserved (mapped, not yet
	# touched) are not free for us: count free - reserved.
	hp=/sys/kernel/mm/hugepages/hugepages-2048kB
	free=$(($(cat $hp/free_hugepages) - $(cat $hp/resv_hugepages)))
	if [ "$free" -lt 128 ]; then
		say "only $free free, unreserved 2 MB hugepages (homa-dpdk wants 128): it will use --no-huge"
	else
		say "$free free, unreserved 2 MB hugepages: homa-dpdk will use them"
	fi
fi
