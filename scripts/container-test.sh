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
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
T0=$(date +%s)

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

# ---------------------------------------------------------------- 1. set-up
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
	free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)
	if [ "$free" -lt "$HUGE_WANT" ]; then
		echo $(($(cat "$nr") + HUGE_WANT - free)) >"$nr" 2>/dev/null || true
		free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)
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

# ---------------------------------------------------------- 2. base image
if podman image exists docker.io/library/debian:bookworm-slim; then
	BASE=docker.io/library/debian:bookworm-slim
	say "base image: $BASE (in local storage)"
elif podman image exists localhost/debian:bookworm-slim; then
	BASE=localhost/debian:bookworm-slim
	say "base image: $BASE (made by an earlier run)"
else
	BASE=localhost/debian:bookworm-slim
	t=$(date +%s)
	srcs=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	uris=$(printf '%s\n' "$srcs" | grep -Eo 'https?://[^ ]+' | sed 's,/$,,' | sort -u)
	mirror=${HOMA_DEBIAN_MIRROR:-$(printf '%s\n' "$uris" | grep -E '/debian$' | head -1)}
	mirror=${mirror:-http://deb.debian.org/debian}
	security=$(printf '%s\n' "$uris" | grep -E '/debian-security$' | head -1)
	security=${security:-http://deb.debian.org/debian-security}
	say "making $BASE: debootstrap --variant=minbase bookworm from $mirror (about a minute) ..."
	rootfs=$(mktemp -d /var/tmp/homa-ct-rootfs.XXXXXX)
	debootstrap --variant=minbase --components=main bookworm "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
		{ tail -20 "$WORK/debootstrap.log"; rm -rf "$rootfs"; fail "debootstrap (log: $WORK/debootstrap.log)"; }
	# Slim it as debian:bookworm-slim is: no docs, man pages or translations
	# (now and for packages installed later), no apt caches or lists.
	cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<-'EOF'
		path-exclude /usr/share/doc/*
		path-include /usr/share/doc/*/copyright
		path-exclude /usr/share/man/*
		path-exclude /usr/share/groff/*
		path-exclude /usr/share/info/*
		path-exclude /usr/share/lintian/*
		path-exclude /usr/share/linda/*
		path-exclude /usr/share/locale/*
	EOF
	cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<-'EOF'
		DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
	EOF
	echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
	echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"
	rm -f "$rootfs/etc/apt/sources.list"
	cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: $mirror
		Suites: bookworm bookworm-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: $security
		Suites: bookworm-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
	find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
	rm -rf "$rootfs"/usr/share/{man,groff,info,lintian,linda,locale}/* \
		"$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* \
		"$rootfs"/var/log/bootstrap.log "$rootfs"/var/log/apt/* "$rootfs"/var/log/dpkg.log
	: >"$rootfs/etc/machine-id"
	tar --numeric-owner -C "$rootfs" -c . | podman import --change 'CMD ["bash"]' - "$BASE" >"$WORK/import.log" 2>&1 ||
		{ rm -rf "$rootfs"; fail "podman import of the base image"; }
	rm -rf "$rootfs"
	say "made $BASE ($(podman image inspect --format '{{.Size}}' "$BASE" | awk '{printf "%.0f MB", $1/1e6}'), $(since "$t"))"
fi

# ------------------------------------------------------------ 3. Go image
gokey=$(cat go.mod go.sum | sha256sum | cut -c1-12)
GO_IMAGE=localhost/homa-dpdk-go:${GOVERSION_HOST#go}-$gokey
if podman image exists "$GO_IMAGE"; then
	say "Go image: $GO_IMAGE (made by an earlier run)"
else
	t=$(date +%s)
	say "making $GO_IMAGE: $GOVERSION_HOST from $GOROOT_HOST and the modules of go.sum ..."
	stage=$(mktemp -d /var/tmp/homa-ct-go.XXXXXX)
	mkdir -p "$stage/usr/local" "$stage/go/bin" "$stage/go/src" "$stage/go/pkg/mod"
	cp -a "$GOROOT_HOST" "$stage/usr/local/go"
	# A fresh module cache filled from the host's (a file:// proxy), then
	# from the host's GOPROXY for anything the host has not downloaded.
	# go list loads every package both binaries import, so the cache holds
	# all the build needs; the build then runs with GOPROXY=off.
	hostproxy="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)"
	if ! GOMODCACHE="$stage/go/pkg/mod" GOFLAGS="$(go env GOFLAGS) -modcacherw" GOPROXY="$hostproxy" CGO_ENABLED=1 \
		sh -c 'go mod download && go list -deps ./cmd/homa-dpdk ./examples/echo >/dev/null' >"$WORK/gomod.log" 2>&1; then
		tail -20 "$WORK/gomod.log"
		rm -rf "$stage"
		fail "downloading the Go modules (log: $WORK/gomod.log)"
	fi
	# Keep the downloads only: the build extracts what it uses.
	find "$stage/go/pkg/mod" -mindepth 1 -maxdepth 1 -not -name cache -exec rm -rf {} +
	rm -rf "$stage/go/pkg/mod/cache/download/sumdb" "$stage/go/pkg/mod/cache/vcs"
	tar --numeric-owner -C "$stage" -c . | podman import - "$GO_IMAGE" >"$WORK/import.log" 2>&1 ||
		{ rm -rf "$stage"; fail "podman import of the Go image"; }
	rm -rf "$stage"
	# Older Go images (another Go version or go.sum) are of no more use.
	podman images --format '{{.Repository}}:{{.Tag}}' localhost/homa-dpdk-go | grep -vxF "$GO_IMAGE" |
		xargs -r podman rmi >/dev/null 2>&1 || true
	say "made $GO_IMAGE ($(since "$t"))"
fi

# ---------------------------------------------------------------- 4. build
t=$(date +%s)
previous=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
say "podman build -t $IMAGE (log: $WORK/build.log) ..."
if ! podman build --pull=never --isolation=chroot --network=host --format=docker \
	--build-arg GO_IMAGE="$GO_IMAGE" --build-arg DEBIAN_IMAGE="$BASE" --build-arg GOPROXY=off \
	-t "$IMAGE" -f Dockerfile . >"$WORK/build.log" 2>&1; then
	tail -30 "$WORK/build.log"
	fail "podman build (log: $WORK/build.log)"
fi
links=$(grep -m1 -oE 'homa-dpdk links: librte.*' "$WORK/build.log" || echo "every layer from the cache")
say "built $IMAGE ($(since "$t")); $links"
# The image this build replaced, now untagged (kept if a container uses it).
current=$(podman image inspect --format '{{.Id}}' "$IMAGE")
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi

# ------------------------------------------------------------- 5. the size
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
say "image size: $(awk -v s="$size" 'BEGIN{printf "%.1f MB", s/1e6}') (limit 200 MB)"
[ "$size" -lt "$MAX_BYTES" ] || fail "the image is $size bytes, over 200 MB"

# --------------------------------------------------- 6. run: podman or chroot
RUNTIME=() # podman's global flags for the runtime that works
RUNFLAGS=(--ulimit "nofile=1024:1024") # replaced by the probe
probe_log=$WORK/probe.log
: >"$probe_log"
: >"$WORK/podman.log"
try_run() { # try_run DESCRIPTION podman-global-flags... -- run-flags...
	local desc=$1 g=() r=()
	shift
	while [ "$1" != -- ]; do g+=("$1"); shift; done
	shift
	r=("$@")
	if podman "${g[@]}" run --rm --network none "${r[@]}" --entrypoint /bin/true "$IMAGE" >>"$probe_log" 2>&1; then
		RUNTIME=("${g[@]}")
		RUNFLAGS=("${r[@]}")
		say "podman run works: $desc"
		return 0
	fi
	say "podman run fails $desc: $(tail -1 "$probe_log" | cut -c1-160)"
	return 1
}
use=chroot
if [ "$MODE" != chroot ]; then
	# Rootful podman asks for RLIMIT_NOFILE 1048576, which a machine without
	# CAP_SYS_RESOURCE (or with a lower hard limit) refuses: then use the
	# hard limits we have (and no more processes than pid_max).
	hardn=$(ulimit -Hn)
	[ "$hardn" = unlimited ] && hardn=1048576
	hardu=$(ulimit -Hu)
	pidmax=$(cat /proc/sys/kernel/pid_max)
	{ [ "$hardu" = unlimited ] || [ "$hardu" -gt "$pidmax" ]; } && hardu=$pidmax
	lim=(--ulimit "nofile=$hardn:$hardn" --ulimit "nproc=$hardu:$hardu")
	if try_run "(default runtime)" -- ||
		try_run "(default runtime, ${lim[*]})" -- "${lim[@]}"; then
		use=podman
	else
		if ! command -v runc >/dev/null 2>&1; then
			say "installing runc (crun 1.8 refuses cgroup v1/v2 hybrid hosts) ..."
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends runc >>"$WORK/apt.log" 2>&1 || true
		fi
		if command -v runc >/dev/null 2>&1 &&
			{ try_run "(--runtime runc)" --runtime runc -- ||
				try_run "(--runtime runc, ${lim[*]})" --runtime runc -- "${lim[@]}"; }; then
			use=podman
		fi
	fi
	if [ "$use" = chroot ]; then
		[ "$MODE" = podman ] && fail "podman run does not work here (log: $probe_log) and HOMA_CONTAINER_MODE=podman"
		say "podman run does not work on this machine: falling back to podman mount + chroot"
	fi
fi
say "running the image: $([ "$use" = podman ] && echo "podman ${RUNTIME[*]} run ${RUNFLAGS[*]}" || echo "podman mount + chroot")"

# The image's entrypoint, default command, environment and health check, as
# the chroot fallback needs them (podman run reads them itself).
mapfile -t ENTRYPOINT < <(podman image inspect --format '{{range .Config.Entrypoint}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
mapfile -t CMD < <(podman image inspect --format '{{range .Config.Cmd}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
mapfile -t ENVS < <(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
mapfile -t HEALTH < <(podman image inspect --format '{{range .HealthCheck.Test}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
[ "${ENTRYPOINT[*]}" = homa-dpdk ] || fail "the image's entrypoint is '${ENTRYPOINT[*]}', not homa-dpdk"
[ "${HEALTH[0]:-}" = CMD ] || fail "the image has no HEALTHCHECK CMD (got '${HEALTH[*]}'): build with --format=docker"
HEALTH=("${HEALTH[@]:1}")
say "entrypoint: ${ENTRYPOINT[*]}; command: ${CMD[*]}; healthcheck: ${HEALTH[*]}"

SOCKDIR=$WORK/sockets # the chroot fallback's stand-in for the volume
ROOTFS_CTR=homa-ct-rootfs
CTRS=(homa-ct-demo homa-ct-daemon homa-ct-workers homa-ct-echo-server homa-ct-echo-client homa-ct-k8s)
BG_PIDS=()
cleanup() {
	local rc=$?
	for p in "${BG_PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	if [ "${HOMA_KEEP:-0}" != 1 ]; then
		for c in "${CTRS[@]}"; do podman "${RUNTIME[@]}" rm -f -t 2 "$c" >/dev/null 2>&1 || true; done
		podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
		podman umount "$ROOTFS_CTR" >/dev/null 2>&1 || true
		podman rm -f -v "$ROOTFS_CTR" >/dev/null 2>&1 || true
		ip netns del "$NS" 2>/dev/null || true
		ip netns del "$PEER_NS" 2>/dev/null || true
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Leftovers of an interrupted run.
for c in "${CTRS[@]}" "$ROOTFS_CTR"; do podman "${RUNTIME[@]}" rm -f -t 2 "$c" >/dev/null 2>&1 || true; done
podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
ip netns del "$NS" 2>/dev/null || true
ip netns del "$PEER_NS" 2>/dev/null || true

if [ "$use" = chroot ]; then
	podman create --name "$ROOTFS_CTR" "$IMAGE" >/dev/null
	ROOT=$(podman mount "$ROOTFS_CTR")
	rm -rf "$SOCKDIR" && mkdir -p "$SOCKDIR"
	say "image filesystem mounted at $ROOT"
	ENV_ARGS=()
	for e in "${ENVS[@]}"; do [ -n "$e" ] && ENV_ARGS+=("$e"); done
fi

# in_image NETNS|- ARGS...: runs the image's entrypoint with ARGS (the
# default command when none) the way `podman run` would, in the chroot
# fallback: in a mount namespace of its own with /dev (so /dev/hugepages),
# /proc, /sys, the socket directory and deploy/k8s (as the Pod's ConfigMap)
# mounted, in network namespace NETNS
# (- for a new empty one). exec all the way: $! is the daemon's pid.
in_image() {
	local netns=$1
	shift
	local args=("$@")
	[ ${#args[@]} -gt 0 ] || args=("${CMD[@]}")
	# shellcheck disable=SC2016 # expanded by the inner bash
	local setup='set -e; r=$1; s=$2; k=$3; shift 3
		mount --rbind /dev "$r/dev"; mount -t proc proc "$r/proc"; mount --rbind /sys "$r/sys"
		mkdir -p "$r/run/homa-dpdk" "$r/etc/homa-dpdk/k8s"
		mount --bind "$s" "$r/run/homa-dpdk"; mount --bind -o ro "$k" "$r/etc/homa-dpdk/k8s"
		exec chroot "$r" "$@"'
	local inner=(unshare --mount --propagation private bash -c "$setup" in-image "$ROOT" "$SOCKDIR" "$REPO/deploy/k8s"
		/usr/bin/env -i "${ENV_ARGS[@]}" "${ENTRYPOINT[@]}" "${args[@]}")
	if [ "$netns" = - ]; then
		exec unshare --net "${inner[@]}"
	else
		exec ip netns exec "$netns" "${inner[@]}"
	fi
}
# in_image_cmd NETNS PROGRAM ARGS...: the same for another program of the
# image (the health check, the echo worker).
in_image_cmd() {
	local saved=("${ENTRYPOINT[@]}")
	ENTRYPOINT=()
	in_image "$@"
	ENTRYPOINT=("${saved[@]}")
}

HUGE_MOUNT=(-v /dev/hugepages:/dev/hugepages)

# ------------------------------------------------------------ 6a. the demo
t=$(date +%s)
say "a. demo --seconds 3 on $([ "$huge" = yes ] && echo hugepages || echo --no-huge) ..."
demo_args=(demo --seconds 3 -- "${EAL_DEMO[@]}")
set +e
if [ "$use" = podman ]; then
	podman "${RUNTIME[@]}" run --rm --name homa-ct-demo --network none "${RUNFLAGS[@]}" --no-healthcheck \
		--cap-add IPC_LOCK "${HUGE_MOUNT[@]}" "$IMAGE" "${demo_args[@]}" >"$WORK/demo.log" 2>&1
else
	(in_image - "${demo_args[@]}") >"$WORK/demo.log" 2>&1
fi
rc=$?
set -e
sed 's/^/    /' "$WORK/demo.log"
[ $rc = 0 ] || fail "the demo exited with $rc (log: $WORK/demo.log)"
grep -q 'P50 µs' "$WORK/demo.log" || fail "the demo printed no percentile table"
rpcs=$(sed -nE 's/^([0-9]+) RPCs in [0-9.]+ s: [0-9]+ RPCs\/s.*/\1/p' "$WORK/demo.log")
[ -n "$rpcs" ] && [ "$rpcs" -gt 0 ] || fail "the demo printed no 'N RPCs in T s: R RPCs/s' line with N > 0"
say "a. demo passed: $rpcs RPCs ($(since "$t"))"

# ----------------------------------------------- 6b. the daemon (default CMD)
t=$(date +%s)
say "b. the default command (${CMD[*]}) on eth0 (af_packet) in network namespace $NS ..."
ip netns add "$NS"
ip netns add "$PEER_NS"
ip -n "$NS" link add eth0 type veth peer name homa-peer netns "$PEER_NS"
ip -n "$NS" link set lo up
ip -n "$NS" link set eth0 up
ip -n "$PEER_NS" link set lo up
ip -n "$PEER_NS" addr add 10.0.0.9/24 dev homa-peer
ip -n "$PEER_NS" link set homa-peer up
health() {
	if [ "$use" = podman ]; then
		podman "${RUNTIME[@]}" healthcheck run homa-ct-daemon >>"$WORK/health.log" 2>&1 &&
			podman "${RUNTIME[@]}" inspect --format '{{range .State.Health.Log}}{{println .Output}}{{end}}' homa-ct-daemon >>"$WORK/health.log"
	else
		(in_image_cmd "$NS" "${HEALTH[@]}") >>"$WORK/health.log" 2>&1
	fi
}
: >"$WORK/health.log"
if [ "$use" = podman ]; then
	podman volume create "$VOLUME" >/dev/null
	# The health check's timer needs systemd, which this machine may not
	# run: the check is run by hand below instead (podman healthcheck run).
	podman "${RUNTIME[@]}" run -d --name homa-ct-daemon --network "ns:/run/netns/$NS" "${RUNFLAGS[@]}" \
		--health-interval disable --cap-add IPC_LOCK --cap-add NET_ADMIN --cap-add NET_RAW \
		"${HUGE_MOUNT[@]}" -v "$VOLUME:/run/homa-dpdk" "$IMAGE" >/dev/null 2>>"$WORK/podman.log"
	socket_dir=$(podman volume inspect --format '{{.Mountpoint}}' "$VOLUME")
	running() { [ "$(podman "${RUNTIME[@]}" inspect --format '{{.State.Running}}' homa-ct-daemon 2>/dev/null)" = true ]; }
else
	rm -rf "$SOCKDIR" && mkdir -p "$SOCKDIR"
	(in_image "$NS") >"$WORK/daemon.log" 2>&1 &
	daemon_pid=$!
	BG_PIDS+=("$daemon_pid")
	socket_dir=$SOCKDIR
	running() { kill -0 "$daemon_pid" 2>/dev/null; }
fi
healthy=no
for _ in $(seq 30); do
	sleep 1
	running || break
	if health; then
		healthy=yes
		break
	fi
done
if [ "$use" = podman ]; then podman "${RUNTIME[@]}" logs homa-ct-daemon >"$WORK/daemon.log" 2>&1 || true; fi
[ "$healthy" = yes ] || { sed 's/^/    /' "$WORK/daemon.log"; fail "the daemon never became healthy (health log: $WORK/health.log)"; }
say "b. the health check passes: $(grep -m1 'counter="passes"' "$WORK/health.log" | tr -s ' ')"
ip netns exec "$PEER_NS" ping -c 3 -i 0.2 -W 2 10.0.0.1 >"$WORK/ping.log" 2>&1 ||
	{ cat "$WORK/ping.log"; fail "the peer cannot ping the daemon's 10.0.0.1 over eth0"; }
say "b. ping from the peer namespace: $(grep -E 'packets transmitted' "$WORK/ping.log")"
[ -S "$socket_dir/workers.sock" ] || fail "no worker socket workers.sock in the socket volume ($socket_dir)"
say "b. worker socket in the volume: /run/homa-dpdk/workers.sock"
if [ "$use" = podman ]; then
	podman "${RUNTIME[@]}" stop -t 15 homa-ct-daemon >/dev/null 2>>"$WORK/podman.log"
	rc=$(podman "${RUNTIME[@]}" inspect --format '{{.State.ExitCode}}' homa-ct-daemon)
	podman "${RUNTIME[@]}" logs homa-ct-daemon >"$WORK/daemon.log" 2>&1 || true
	podman "${RUNTIME[@]}" rm homa-ct-daemon >/dev/null 2>>"$WORK/podman.log"
else
	kill -TERM "$daemon_pid"
	set +e
	wait "$daemon_pid"
	rc=$?
	set -e
	BG_PIDS=()
fi
sed 's/^/    /' "$WORK/daemon.log"
[ "$rc" = 0 ] || fail "the daemon exited with $rc after SIGTERM (log: $WORK/daemon.log)"
grep -q 'stopping' "$WORK/daemon.log" || fail "the daemon's log does not show it stopping on SIGTERM"
ip netns del "$NS"
ip netns del "$PEER_NS"
say "b. daemon passed: healthy, answers ping, stopped cleanly on SIGTERM ($(since "$t"))"

# ------------------------------------------ 6c. workers through the volume
t=$(date +%s)
say "c. demo --workers /run/homa-dpdk; the echo server and client, each in a container of its own, on the socket volume ..."
workers_args=(demo --workers /run/homa-dpdk --seconds 120 -- "${EAL_DEMO[@]}")
echo_server=(homa-echo server -socket /run/homa-dpdk/10.0.0.2.sock -port 99)
echo_client=(homa-echo client -socket /run/homa-dpdk/10.0.0.1.sock -to 10.0.0.2:99 -n 300 -size 20000)
if [ "$use" = podman ]; then
	podman volume exists "$VOLUME" || podman volume create "$VOLUME" >/dev/null
	socket_dir=$(podman volume inspect --format '{{.Mountpoint}}' "$VOLUME")
	podman "${RUNTIME[@]}" run -d --name homa-ct-workers --network none "${RUNFLAGS[@]}" --no-healthcheck --cap-add IPC_LOCK \
		"${HUGE_MOUNT[@]}" -v "$VOLUME:/run/homa-dpdk" "$IMAGE" "${workers_args[@]}" >/dev/null
else
	rm -rf "$SOCKDIR" && mkdir -p "$SOCKDIR"
	socket_dir=$SOCKDIR
	(in_image - "${workers_args[@]}") >"$WORK/workers.log" 2>&1 &
	workers_pid=$!
	BG_PIDS+=("$workers_pid")
fi
for _ in $(seq 60); do
	[ -S "$socket_dir/10.0.0.1.sock" ] && [ -S "$socket_dir/10.0.0.2.sock" ] && break
	sleep 0.5
done
[ -S "$socket_dir/10.0.0.2.sock" ] || fail "demo --workers made no sockets in the volume"
if [ "$use" = podman ]; then
	podman "${RUNTIME[@]}" run -d --name homa-ct-echo-server --network none "${RUNFLAGS[@]}" --no-healthcheck \
		-v "$VOLUME:/run/homa-dpdk" --entrypoint "${echo_server[0]}" "$IMAGE" "${echo_server[@]:1}" >/dev/null
	sleep 1
	set +e
	podman "${RUNTIME[@]}" run --rm --name homa-ct-echo-client --network none "${RUNFLAGS[@]}" --no-healthcheck \
		-v "$VOLUME:/run/homa-dpdk" --entrypoint "${echo_client[0]}" "$IMAGE" "${echo_client[@]:1}" >"$WORK/echo-client.log" 2>&1
	rc=$?
	set -e
	podman "${RUNTIME[@]}" kill --signal INT homa-ct-echo-server >/dev/null 2>&1 || true
	podman "${RUNTIME[@]}" wait homa-ct-echo-server >/dev/null 2>&1 || true
	podman "${RUNTIME[@]}" logs homa-ct-echo-server >"$WORK/echo-server.log" 2>&1 || true
	podman "${RUNTIME[@]}" kill --signal INT homa-ct-workers >/dev/null 2>&1 || true
	wrc=$(podman "${RUNTIME[@]}" wait homa-ct-workers 2>/dev/null || echo "?")
	podman "${RUNTIME[@]}" logs homa-ct-workers >"$WORK/workers.log" 2>&1 || true
else
	(in_image_cmd - "${echo_server[@]}") >"$WORK/echo-server.log" 2>&1 &
	server_pid=$!
	BG_PIDS+=("$server_pid")
	sleep 1
	set +e
	(in_image_cmd - "${echo_client[@]}") >"$WORK/echo-client.log" 2>&1
	rc=$?
	kill -INT "$server_pid"
	wait "$server_pid"
	kill -INT "$workers_pid"
	wait "$workers_pid"
	wrc=$?
	set -e
	BG_PIDS=()
fi
sed 's/^/    /' "$WORK/workers.log" "$WORK/echo-server.log" "$WORK/echo-client.log"
[ "$rc" = 0 ] || fail "the echo client exited with $rc (log: $WORK/echo-client.log)"
grep -q 'all echoed byte for byte' "$WORK/echo-client.log" || fail "the echo client did not get every RPC back"
grep -q 'requests answered' "$WORK/echo-server.log" || fail "the echo server did not stop cleanly"
[ "$wrc" = 0 ] || fail "demo --workers exited with $wrc after SIGINT (log: $WORK/workers.log)"
say "c. workers passed: $(grep -o '[0-9]* RPCs of [0-9]* bytes' "$WORK/echo-client.log") echoed through the socket $([ "$use" = podman ] && echo "volume $VOLUME" || echo "directory $SOCKDIR (bind-mounted into each chroot)") ($(since "$t"))"

# ------------------------------- 6d. the Kubernetes Pod's start script
t=$(date +%s)
say "d. deploy/k8s/start.sh (the Pod's command) with a fake SR-IOV VF 0000:3b:02.1 ..."
fake_vf=0000:3b:02.1
k8s_start=(/bin/sh /etc/homa-dpdk/k8s/start.sh)
set +e
if [ "$use" = podman ]; then
	podman "${RUNTIME[@]}" run --rm --name homa-ct-k8s --network none "${RUNFLAGS[@]}" --no-healthcheck \
		--cpuset-cpus 0-1 --cap-add IPC_LOCK "${HUGE_MOUNT[@]}" -v "$REPO/deploy/k8s:/etc/homa-dpdk/k8s:ro" \
		-e "PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK=$fake_vf" --entrypoint "${k8s_start[0]}" "$IMAGE" "${k8s_start[@]:1}" >"$WORK/k8s.log" 2>&1
else
	(in_image_cmd - "PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK=$fake_vf" "${k8s_start[@]}") >"$WORK/k8s.log" 2>&1
fi
set -e
sed 's/^/    /' "$WORK/k8s.log"
# There is no VF here: the daemon must read the rendered config, bring EAL
# up with the Pod's arguments and stop at the missing port.
grep -q '"EAL up"' "$WORK/k8s.log" && grep -q '"--lcores","0@0,1@1","-a","'"$fake_vf"'"' "$WORK/k8s.log" ||
	fail "the Pod's start script did not bring EAL up with --lcores 0@0,1@1 -a $fake_vf"
grep -q "start-up phase validate: ports\[0\].device: port \"$fake_vf\": no such port" "$WORK/k8s.log" ||
	fail "the daemon under the Pod's start script did not get as far as looking for the VF $fake_vf"
say "d. the Pod's config and EAL arguments are accepted; the daemon looks for the VF ($(since "$t"))"

# --------------------------------------------- 7. the manifests' consistency
say "deploy/k8s: YAML, and the Pod against the image and the config ..."
IMAGE_HEALTH="${HEALTH[*]}" python3 "$REPO/scripts/lib/container-test/check_k8s.py" "$REPO/deploy/k8s" ||
	fail "deploy/k8s does not match the image (see above)"
say "deploy/k8s matches the image and the config"

say "PASSED ($use mode, image $IMAGE $(awk -v s="$size" 'BEGIN{printf "%.1f MB", s/1e6}')) in $(since "$T0")"
