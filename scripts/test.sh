#!/usr/bin/env bash
# The README's second command: set up the machine and run every test.
# DPDK tests need root; they skip with the reason otherwise, and fail
# instead when HOMA_REQUIRE_DPDK=1 (CI sets it); so do the tests of the
# ns-3 program's runs with HOMA_REQUIRE_NS3=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh

echo "== gofmt, go vet"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then
	echo "gofmt would change: $bad"
	exit 1
fi
go vet ./...

echo "== deploy/: systemd units, alert rules, dashboard, man page"
bash scripts/lib/check-deploy.sh

echo "== the Python package: offline installs in fresh venvs"
bash python/tests/install.sh

# gotest runs go test with its arguments, which include -v: its output goes
# to $log (for the count at the end) and through the filter below, and its
# failure sets rc. -v runs the packages one at a time too, so each package's
# output (its tests' logs and its child processes' stderr, a crash's signal
# and stack included) is contiguous and ends with its "ok" or
# "FAIL\t<package>" line: a passing package shows only that line, a failing
# one all of it.
log=$(mktemp)
rc=0
gotest() {
	local status
	set +e
	go test "$@" 2>&1 | tee -a "$log" | awk '
	function flush(  i) { for (i = 0; i < n; i++) print buf[i]; n = 0 }
	/^ok  \t/ { n = 0; print; fflush(); next }
	/^\?   \t/ { n = 0; next }
	/^FAIL\t/ { flush(); print; fflush(); next }
	{ buf[n++] = $0 }
	END { if (n > 1 || (n == 1 && buf[0] != "FAIL")) { print "== output after the last package line:"; flush() } }'
	status=${PIPESTATUS[0]}
	set -e
	if [ "$status" -ne 0 ]; then rc=$status; fi
}

echo "== pure-Go packages without cgo"
CGO_ENABLED=0 gotest -count=1 -v $(go list ./... | grep -E '/(wire|engine|sched|nicq|shm|hub|client|config)(/|$)')

echo "== native/: libhoma's tests, then under ASan/UBSan"
make -C native test asan

echo "== nccl/: the NCCL net plugin's conformance harness, then under ASan/UBSan"
make -C nccl test asan
echo "== the one-GPU check's parts that run without a GPU"
bash scripts/gpu-nccl-check.sh --prepare
bash scripts/gpu-nccl-check.sh --cpu

echo "== ns3/: the ns-3 program (DCTCP and TCP for perf cluster), built and checked"
make -s -C ns3 test

# The Go tests run the Python package from the source tree (PYTHONPATH) with
# Debian's python3: its libraries (libhoma, the binding, the C++ torch
# backend) are built there first, as the scripts that run it do.
echo "== the Python package's native libraries, built in place"
/usr/bin/python3 python/_build/homa_build.py --inplace --quiet

echo "== all tests (HOMA_REQUIRE_DPDK=${HOMA_REQUIRE_DPDK:-0})"
# -p 1: one test binary at a time. DPDK tests busy-poll pinned lcores;
# binaries running side by side on a 2-CPU machine would starve each other.
gotest -p 1 -count=1 -timeout 20m -v ./...

# The suites that honour HOMA_TEST_SHARDS (engine/testshards_test.go says
# which, and why the others cannot) again with every host of 2 shards: each
# frame steered to the shard that owns its RPC, acks handed between shards.
echo "== the engine's suites again on 2 shards a host (HOMA_TEST_SHARDS=2)"
HOMA_TEST_SHARDS=2 gotest -p 1 -count=1 -timeout 10m -v \
	-run '^(TestTestShards_knobHonoured|TestScenario_lossReorderDuplication|TestLongMessage_memnetWithLoss|TestHostile_mixWhileClientCompletes|TestSlowdown_W4at80|TestSlowdown_idleMatchesLinkMath|TestTrickle_peerKeepsNoMoreThanItsShare)$' \
	./engine/...

# The daemon's memif tests again with both daemons' ports of 2 shards
# (runMemifDaemon's config: ports[].lcores), their workers each on a shard:
# memif pairs the queues, so half the frames are handed between shards.
# This run copies every worker payload (workers.zero_copy_min 0), the run
# above sends those of 4 KB and more from the workers' arenas: the suite
# runs both ways.
echo "== the daemon's memif tests again on 2 shards a port, payloads copied (HOMA_TEST_SHARDS=2 HOMA_TEST_ZERO_COPY_MIN=0)"
HOMA_TEST_SHARDS=2 HOMA_TEST_ZERO_COPY_MIN=0 gotest -p 1 -count=1 -timeout 10m -v -run '^TestMemif' ./daemon

# The receive copier's tests again under the race detector: the copier is
# a thread of its own (a goroutine in the engine's and hub's tests, the
# daemon's copier thread in the memif suite's), and a copy that races the
# loop or a worker over a buffer is the fault they look for.
echo "== the copier's tests under the race detector"
gotest -race -p 1 -count=1 -timeout 10m -v \
	-run '^(TestCopier_.*|TestHub_copierStaleCopiesNeverReachAnotherMessage|TestHub_detachWithCopiesPendingDoesNotStallTheLoop|TestMemifHosts_copierStrangersCopiesNeverReachAWorker|TestMemifHosts_workersWithACopier)$' \
	./engine ./hub ./daemon

pass=$(grep -c -- '--- PASS' "$log" || true)
fail=$(grep -c -- '--- FAIL' "$log" || true)
skip=$(grep -c -- '--- SKIP' "$log" || true)
rm -f "$log"
echo "tests: $pass passed, $fail failed, $skip skipped"
exit "$rc"
