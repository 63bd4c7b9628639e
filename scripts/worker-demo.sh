#!/usr/bin/env bash
# The worker examples of docs/workers.md, end to end: set up, build, start
# `homa-dpdk demo --workers` (two Homa hosts on a net_memif pair serving
# workers), then run the Go echo pair and the Python parameter-server pair
# through it, and stop the daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/prepare.sh
go build -o echo ./examples/echo

dir=/run/homa-dpdk/demo
./homa-dpdk demo --workers "$dir" &
daemon=$!
pids=()
cleanup() { # the workers leave first, then the daemon
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	kill -TERM "$daemon" 2>/dev/null || true
	wait "$daemon" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 100); do
	[ -S "$dir/10.0.0.1.sock" ] && [ -S "$dir/10.0.0.2.sock" ] && break
	sleep 0.1
done
[ -S "$dir/10.0.0.1.sock" ] || { echo "worker-demo: the daemon's sockets did not appear" >&2; exit 1; }

echo "== Go: examples/echo (server on 10.0.0.2:99, client on 10.0.0.1)"
./echo server -socket "$dir/10.0.0.2.sock" -port 99 &
pids+=($!)
sleep 0.3
./echo client -socket "$dir/10.0.0.1.sock" -to 10.0.0.2:99 -n 2000 -size 100
./echo client -socket "$dir/10.0.0.1.sock" -to 10.0.0.2:99 -n 50 -size 1000000

echo "== Python: python/examples/param_server.py (numpy arrays)"
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's, with python3-numpy
$py python/examples/param_server.py --role server --socket "$dir/10.0.0.2.sock" --port 5000 &
pids+=($!)
sleep 0.5
$py python/examples/param_server.py --role worker --socket "$dir/10.0.0.1.sock" --server 10.0.0.2:5000 --steps 10
