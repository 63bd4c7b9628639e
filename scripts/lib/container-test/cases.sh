# shellcheck shell=bash
# Sourced by scripts/container-test.sh: the checks of steps 6a to 6d, run
# through runner.sh, and step 7, deploy/k8s against the image (check_k8s.py).

# ------------------------------------------- 6. the build the image stamps
case_version() {
	set +e
	if [ "$use" = podman ]; then
		out=$(podman "${RUNTIME[@]}" run --rm --network none "${RUNFLAGS[@]}" --no-healthcheck "$IMAGE" version 2>&1)
	else
		out=$( (in_image - version) 2>&1)
	fi
	rc=$?
	set -e
	say "version: $out"
	[ $rc = 0 ] || fail "homa-dpdk version exited with $rc in the image"
	commit=$(git rev-parse HEAD 2>/dev/null || true)
	[ -z "$commit" ] || [[ "$out" == *"commit ${commit:0:12}"* ]] ||
		fail "the image's homa-dpdk version does not name this checkout's commit ${commit:0:12}"
	[[ "$out" == *"DPDK "* ]] || fail "the image's homa-dpdk version names no DPDK version"
	# The shipped config and the example, every key documented, check out.
	for f in /etc/homa-dpdk/homa.yaml /etc/homa-dpdk/example.yaml; do
		set +e
		if [ "$use" = podman ]; then
			out=$(podman "${RUNTIME[@]}" run --rm --network none "${RUNFLAGS[@]}" --no-healthcheck "$IMAGE" config check "$f" 2>&1)
		else
			out=$( (in_image - config check "$f") 2>&1)
		fi
		rc=$?
		set -e
		[ $rc = 0 ] || fail "homa-dpdk config check $f in the image: $out"
		say "config check $f: $(head -1 <<<"$out")"
	done
}

# ------------------------------------------------------------ 6a. the demo
case_demo() {
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
}

# ----------------------------------------------- 6b. the daemon (default CMD)
case_daemon() {
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
}

# ------------------------------------------ 6c. workers through the volume
case_workers() {
	t=$(date +%s)
	say "c. demo --workers /run/homa-dpdk; the echo server and client, each in a container of its own, on the socket volume ..."
	workers_args=(demo --workers /run/homa-dpdk -- "${EAL_DEMO[@]}") # until its SIGINT below (or the clean-up): no fixed time
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
}

# ------------------------------- 6d. the Kubernetes Pod's start script
case_k8s() {
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
}

# --------------------------------------------- 7. the manifests' consistency
check_manifests() {
	say "deploy/k8s: YAML, and the Pod against the image and the config ..."
	IMAGE_HEALTH="${HEALTH[*]}" python3 "$REPO/scripts/lib/container-test/check_k8s.py" "$REPO/deploy/k8s" ||
		fail "deploy/k8s does not match the image (see above)"
	say "deploy/k8s matches the image and the config"
}
