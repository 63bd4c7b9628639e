# shellcheck shell=bash
# Sourced by scripts/container-test.sh: step 1, the host's set-up. Uses
# WORK and HUGE_WANT; sets GOROOT_HOST, GOVERSION_HOST, huge (yes/no),
# EAL_MEM and EAL_DEMO.

# ---------------------------------------------------------------- 1. set-up
setup_host() {
	need=()
	for p in podman debootstrap iproute2 util-linux python3-yaml; do # python3-yaml: step 7
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
	done
	if [ ${#need[@]} -gt 0 ]; then
		say "installing ${need[*]} ..."
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >"$WORK/apt.log" 2>&1 ||
			{ tail -20 "$WORK/apt.log"; fail "apt-get install ${need[*]}"; }
	fi
	say "$(podman --version), debootstrap $(dpkg-query -W -f='${Version}' debootstrap)"

	if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
		export PATH="$PATH:/usr/local/go/bin"
	fi
	command -v go >/dev/null 2>&1 || fail "Go is not installed: the image's build stage takes the host's Go (https://go.dev/dl/, /usr/local/go)"
	GOROOT_HOST=$(go env GOROOT)
	GOVERSION_HOST=$(go env GOVERSION)

	huge=no
	nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	if [ -e "$nr" ]; then
		mkdir -p /dev/hugepages
		grep -qs ' /dev/hugepages hugetlbfs ' /proc/mounts || mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages 2>/dev/null || true
		# free - reserved: pages another process reserved are not ours.
		hp=/sys/kernel/mm/hugepages/hugepages-2048kB
		free=$(($(cat $hp/free_hugepages) - $(cat $hp/resv_hugepages)))
		if [ "$free" -lt "$HUGE_WANT" ]; then
			echo $(($(cat "$nr") + HUGE_WANT - free)) >"$nr" 2>/dev/null || true
			free=$(($(cat $hp/free_hugepages) - $(cat $hp/resv_hugepages)))
		fi
		if grep -qs ' /dev/hugepages hugetlbfs ' /proc/mounts && [ "$free" -ge 128 ]; then
			huge=yes
		fi
		say "hugepages: $free free 2 MB pages, hugetlbfs on /dev/hugepages: $huge"
	else
		say "hugepages: this kernel has no 2 MB hugepages"
	fi
	if [ "$huge" = yes ]; then
		EAL_MEM=(--in-memory)
	else
		say "WARNING: no usable hugepages: the containers run EAL with --no-huge (the image is still tested)"
		EAL_MEM=(--no-huge -m 1024)
	fi
	# EAL for the demos: lcore 0 (main) and 1 (the polling loop), no PCI, quiet.
	# shellcheck disable=SC2054 # "0,1" is one argument
	EAL_DEMO=(-l 0,1 --no-pci --log-level lib.eal:error "${EAL_MEM[@]}")
}
