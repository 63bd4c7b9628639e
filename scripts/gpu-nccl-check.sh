#!/usr/bin/env bash
# The NCCL plugin's one-GPU check: two ranks on one GPU whose NCCL
# traffic goes through libnccl-net-homa.so, then through NCCL's own
# Socket net, each running all_reduce from 8 B to 128 MiB
# (nccl/gpu/allreduce_check.py); it passes when NCCL_DEBUG=INFO shows the
# homa net chosen, every element of both runs is the sum it must be, and
# prints a table of the two runs' times and their ratios.
#
# The GPU machine has PyTorch with NCCL and a C compiler, but no DPDK and
# no network: the daemon there is the fake engine (shm/shmtest, one
# loopback host with the daemon's real sockets, rings and header), a static
# binary prepared here and carried along.
#
#   scripts/gpu-nccl-check.sh --prepare   here: build nccl/build/shmfake (static) to carry
#   scripts/gpu-nccl-check.sh --cpu       here: what runs without a GPU (build, the fake
#                                         engine, the plugin loaded against it, the driver's
#                                         no-CUDA exit)
#   scripts/gpu-nccl-check.sh [--max B]   on the GPU machine (about 2 minutes)
#
# OUT (default /tmp/gpu-nccl-check) receives the logs, homa.json,
# socket.json and table.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=gpu max=$((128 << 20))
while [ $# -gt 0 ]; do
	case $1 in
	--prepare) mode=prepare ;;
	--cpu) mode=cpu ;;
	--max) max=$2; shift ;;
	*) echo "gpu-nccl-check: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
out=${OUT:-/tmp/gpu-nccl-check}
mkdir -p "$out" nccl/build
fake_bin=nccl/build/shmfake
py=${PYTHON:-python3}

if [ "$mode" = prepare ]; then
	go=$(command -v go || echo /usr/local/go/bin/go)
	CGO_ENABLED=0 "$go" build -o "$fake_bin" ./shm/shmtest/cmd/shmfake
	echo "gpu-nccl-check: $fake_bin built; carry it to the GPU machine"
	exit 0
fi

# The plugin, built with this machine's compiler (libhoma linked in).
make -s -C nccl build/libnccl-net-homa.so
plugin=$PWD/nccl/build/libnccl-net-homa.so
[ -x "$fake_bin" ] || { echo "gpu-nccl-check: no $fake_bin: run --prepare where Go is, and carry it" >&2; exit 1; }

sock=$out/fake.sock
rm -f "$sock"
# messages up to 128 MiB; two sessions a rank, each with room for them
"$fake_bin" -socket "$sock" -ip 127.0.0.1 -host-info -link-mbps 100000 -region-max-message $((max + 64)) \
	-arena $((2 * max + (1 << 20))) -pool-pages $((3 * max / 65536 + 64)) > "$out/fake.log" 2>&1 &
fake=$!
trap 'kill $fake 2>/dev/null || true' EXIT
for _ in $(seq 200); do grep -q ready "$out/fake.log" && break; sleep 0.05; done
grep -q ready "$out/fake.log" || { cat "$out/fake.log"; exit 1; }

if [ "$mode" = cpu ]; then
	py=${PYTHON:-/usr/bin/python3} # Debian's, with its CPU torch (scripts/setup.sh)
	make -s -C nccl build/harness
	HOMA_NCCL_SOCKET=$sock nccl/build/harness "$plugin" -v 10 props orders
	set +e
	RANK=0 WORLD_SIZE=1 "$py" nccl/gpu/allreduce_check.py --out "$out/cpu.json" 2> "$out/cpu.log"
	st=$?
	set -e
	if [ $st -ne 77 ]; then
		cat "$out/cpu.log"
		echo "gpu-nccl-check --cpu: the driver exited $st without CUDA; want 77 (skipped)"
		exit 1
	fi
	echo "gpu-nccl-check --cpu: passed (the plugin loads against the fake engine; the driver skips without CUDA)"
	exit 0
fi

# run NAME ENV...: two ranks on GPU 0, NCCL told two hosts
# (NCCL_HOSTID) and kept off its peer-to-peer and shared-memory paths.
run() {
	local name=$1 port=$((29500 + RANDOM % 1000)) pids=()
	shift
	for r in 0 1; do
		env "$@" RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port LOCAL_DEVICE=0 \
			NCCL_HOSTID=homa-check-$r NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_MULTI_RANK_GPU_ENABLE=1 \
			NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET HOMA_NCCL_SOCKET="$sock" \
			timeout 240 "$py" nccl/gpu/allreduce_check.py --max "$max" --out "$out/$name.json" \
			> "$out/$name-$r.log" 2>&1 &
		pids+=($!)
	done
	local st=0
	for p in "${pids[@]}"; do wait "$p" || st=1; done
	if [ $st -ne 0 ]; then
		tail -n 30 "$out/$name-0.log" "$out/$name-1.log"
		echo "gpu-nccl-check: the $name run failed (logs in $out)"
		exit 1
	fi
}

run homa NCCL_NET_PLUGIN="$plugin" NCCL_NET=homa
grep -qi "using network homa\|NET/homa" "$out/homa-0.log" || {
	grep -i "net" "$out/homa-0.log" | head -20
	echo "gpu-nccl-check: NCCL did not choose the homa net"
	exit 1
}
run socket NCCL_NET=Socket

"$py" - "$out/homa.json" "$out/socket.json" <<'EOF' | tee "$out/table.txt"
import json, sys
h = [json.loads(l) for l in open(sys.argv[1])]
s = [json.loads(l) for l in open(sys.argv[2])]
print(f"{'bytes':>11} {'homa us':>10} {'socket us':>10} {'homa/socket':>11} {'homa busbw':>10} {'socket busbw':>12}  equal")
for a, b in zip(h, s):
    print(f"{a['bytes']:>11} {a['time_us']:>10.1f} {b['time_us']:>10.1f} {a['time_us'] / b['time_us']:>11.2f} "
          f"{a['busbw_gbps']:>10.3f} {b['busbw_gbps']:>12.3f}  {a['ok'] and b['ok']}")
sys.exit(0 if all(a["ok"] and b["ok"] for a, b in zip(h, s)) else 1)
EOF
echo "gpu-nccl-check: passed (homa net chosen; every result the sum it must be)"
