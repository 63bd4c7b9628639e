# shellcheck shell=bash
# Sourced by scripts/container-test.sh: step 6's machinery, running the image:
# with podman run where it works here (use=podman, RUNTIME, RUNFLAGS), else
# from its filesystem through podman mount and chroot (use=chroot, ROOT);
# its entrypoint, command, environment and health check; the clean-up of
# what the cases make.

# --------------------------------------------------- 6. run: podman or chroot
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

# pick_runner: podman run if it works here (and HOMA_CONTAINER_MODE allows), else chroot.
pick_runner() {
	RUNTIME=() # podman's global flags for the runtime that works
	RUNFLAGS=(--ulimit "nofile=1024:1024") # replaced by the probe
	probe_log=$WORK/probe.log
	: >"$probe_log"
	: >"$WORK/podman.log"
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
}

# The image's entrypoint, default command, environment and health check, as
# the chroot fallback needs them (podman run reads them itself).
read_image_config() {
	mapfile -t ENTRYPOINT < <(podman image inspect --format '{{range .Config.Entrypoint}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
	mapfile -t CMD < <(podman image inspect --format '{{range .Config.Cmd}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
	mapfile -t ENVS < <(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
	mapfile -t HEALTH < <(podman image inspect --format '{{range .HealthCheck.Test}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
	[ "${ENTRYPOINT[*]}" = homa-dpdk ] || fail "the image's entrypoint is '${ENTRYPOINT[*]}', not homa-dpdk"
	[ "${HEALTH[0]:-}" = CMD ] || fail "the image has no HEALTHCHECK CMD (got '${HEALTH[*]}'): build with --format=docker"
	HEALTH=("${HEALTH[@]:1}")
	say "entrypoint: ${ENTRYPOINT[*]}; command: ${CMD[*]}; healthcheck: ${HEALTH[*]}"
}

# cleanup, on exit once the runs have started: the background runs
# interrupted; the containers, volume, mount and namespaces removed (kept
# with HOMA_KEEP=1).
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

# start_runs: the clean-up on exit, an interrupted run's leftovers removed,
# and for the chroot way the image's filesystem mounted.
start_runs() {
	SOCKDIR=$WORK/sockets # the chroot fallback's stand-in for the volume
	ROOTFS_CTR=homa-ct-rootfs
	CTRS=(homa-ct-demo homa-ct-daemon homa-ct-workers homa-ct-echo-server homa-ct-echo-client homa-ct-k8s)
	BG_PIDS=()
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
	HUGE_MOUNT=(-v /dev/hugepages:/dev/hugepages)
}

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
