#!/usr/bin/env bash
# The README's command for PyTorch: set up what is missing (python3-torch
# included), build homa-dpdk, start the demo daemon serving 4 hosts, and
# run python/examples/allreduce.py on 4 ranks under torchrun with
# --backend homa, then with --backend gloo (the same results). With
# arguments, `./scripts/torch-demo.sh SCRIPT.py [ARGS]` runs that script
# the same way (4 ranks; the backend "homa" usable after
# `import homa_dpdk.torch`) and exits with its status.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/prepare.sh
ranks=${HOMA_TORCH_RANKS:-4}
dir=$(mktemp -d /tmp/homa-torch.XXXXXX)
logs=$dir/logs
mkdir -p "$logs"
./homa-dpdk demo --workers "$dir" --hosts "$ranks" >"$dir/daemon.log" 2>&1 &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
	[ -S "$dir/10.0.0.$ranks.sock" ] && break
	kill -0 $daemon 2>/dev/null || { cat "$dir/daemon.log"; exit 1; }
	sleep 0.1
done
[ -S "$dir/10.0.0.$ranks.sock" ] || { echo "torch-demo: the daemon's sockets did not appear" >&2; cat "$dir/daemon.log"; exit 1; }
export HOMA_DPDK_SOCKET_DIR=$dir PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH} OMP_NUM_THREADS=1
port=$((29500 + $$ % 400))
# torchrun on Python 3.11 (Debian's torch 1.13) dies with its default
# --redirects 0 --tee 0 (Std.from_str returns None); --redirects 2 --tee 2
# works around it and keeps each rank's stderr in $logs as well.
run() {
	port=$((port + 1))
	torchrun --nproc_per_node="$ranks" --master_addr=127.0.0.1 --master_port=$port \
		--redirects 2 --tee 2 --log_dir "$logs/$port" "$@"
}
if [ $# -gt 0 ]; then
	set +e
	run "$@"
	exit $?
fi
run python/examples/allreduce.py --backend homa | tee "$dir/homa.out"
run python/examples/allreduce.py --backend gloo | tee "$dir/gloo.out"
# The results, without the first line (it names the backend), must agree.
if diff <(tail -n +2 "$dir/homa.out") <(tail -n +2 "$dir/gloo.out") >/dev/null; then
	echo "torch-demo: homa and gloo gave the same results"
else
	echo "torch-demo: homa and gloo differ:" >&2
	diff <(tail -n +2 "$dir/homa.out") <(tail -n +2 "$dir/gloo.out") >&2 || true
	exit 1
fi
