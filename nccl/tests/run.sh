#!/usr/bin/env bash
# run.sh HARNESS PLUGIN SHMFAKE [-v VERSIONS] [CASE...]: the conformance
# harness against the fake engine (one loopback host whose workers reach
# each other's ports), each table version in turn. daemon_gone kills its
# daemon: it runs last, on a fake engine of its own for each version.
set -euo pipefail
harness=$1 plugin=$2 shmfake=$3
shift 3
versions=10,9,8
if [ "${1:-}" = -v ]; then versions=$2; shift 2; fi
dir=$(mktemp -d)
fake=
trap 'kill $fake 2>/dev/null || true; rm -rf "$dir"' EXIT

# start_fake starts a fake engine on $dir/fake.sock ($fake: its pid)
start_fake() {
	rm -f "$dir/fake.sock" "$dir/fake.log"
	"$shmfake" -socket "$dir/fake.sock" -ip 127.0.0.1 -host-info -link-mbps 25000 \
		-region-max-message 16777256 -arena 41943040 -pool-pages 768 ${SHMFAKE_ARGS:-} > "$dir/fake.log" 2>&1 &
	fake=$!
	disown $fake # killed on purpose (daemon_gone, and below): no "Killed" line
	for _ in $(seq 200); do
		grep -q "ready" "$dir/fake.log" 2>/dev/null && return 0
		sleep 0.05
	done
	cat "$dir/fake.log"
	echo "run.sh: shmfake did not start"
	exit 1
}

cases=("$@")
rc=0
if [ ${#cases[@]} -eq 0 ] || [ "${cases[*]}" != daemon_gone ]; then
	start_fake
	rest=()
	for c in "${cases[@]}"; do [ "$c" = daemon_gone ] || rest+=("$c"); done
	HOMA_NCCL_SOCKET="$dir/fake.sock" HARNESS_SKIP=daemon_gone "$harness" "$plugin" -v "$versions" "${rest[@]}" || rc=1
	kill $fake 2>/dev/null || true
fi
if [ ${#cases[@]} -eq 0 ] || [[ " ${cases[*]} " == *" daemon_gone "* ]]; then
	for v in ${versions//,/ }; do
		start_fake
		HOMA_NCCL_SOCKET="$dir/fake.sock" HARNESS_DAEMON_PID=$fake "$harness" "$plugin" -v "$v" daemon_gone || rc=1
		kill $fake 2>/dev/null || true
	done
fi
exit $rc
