#!/usr/bin/env bash
# run.sh HARNESS PLUGIN SHMFAKE: the conformance harness against the fake
# engine (one loopback host whose workers reach each other's ports), each
# table version in turn. Extra arguments go to the harness (case names).
set -euo pipefail
harness=$1 plugin=$2 shmfake=$3
shift 3
dir=$(mktemp -d)
trap 'kill $fake 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
"$shmfake" -socket "$dir/fake.sock" -ip 127.0.0.1 -host-info -link-mbps 25000 \
	-region-max-message 16777256 -arena 41943040 -pool-pages 768 ${SHMFAKE_ARGS:-} > "$dir/fake.log" 2>&1 &
fake=$!
for _ in $(seq 200); do
	grep -q "ready" "$dir/fake.log" 2>/dev/null && break
	sleep 0.05
done
grep -q "ready" "$dir/fake.log" || { cat "$dir/fake.log"; echo "run.sh: shmfake did not start"; exit 1; }
HOMA_NCCL_SOCKET="$dir/fake.sock" "$harness" "$plugin" "$@"
