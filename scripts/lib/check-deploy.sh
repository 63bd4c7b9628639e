#!/usr/bin/env bash
# The operations kit under deploy/ checks out: the systemd units verify
# (with the program built here in place of /usr/local/bin/homa-dpdk), the
# Prometheus alert rules pass promtool's check and their unit tests, the
# Grafana dashboard is JSON, and the man page renders. Run by
# scripts/test.sh; the metric names the rules and the dashboard use are
# checked against a live /metrics by package daemon's tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "check-deploy: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/homa-dpdk" ./cmd/homa-dpdk
if command -v systemd-analyze >/dev/null; then
	for u in deploy/systemd/*.service; do
		sed "s|/usr/local/bin/homa-dpdk|$work/homa-dpdk|g" "$u" >"$work/$(basename "$u")"
	done
	out=$(cd "$work" && systemd-analyze verify --man=no ./*.service 2>&1) || fail "systemd-analyze verify: $out"
	# Only warnings about this machine (no systemd running, missing units it names) are allowed.
	if grep -v -E 'homa-dpdk-hugepages.service|network-online.target|Failed to .* bus|System has not been booted' <<<"$out" | grep -q .; then
		fail "systemd-analyze verify: $out"
	fi
	echo "systemd units: verified"
else
	[ "${HOMA_REQUIRE_DPDK:-0}" != 1 ] || fail "systemd-analyze is missing"
	echo "systemd units: not verified (no systemd-analyze)"
fi
if command -v promtool >/dev/null; then
	promtool check rules deploy/prometheus/alerts.yaml
	(cd deploy/prometheus && promtool test rules alerts_test.yaml)
else
	[ "${HOMA_REQUIRE_DPDK:-0}" != 1 ] || fail "promtool is missing (Debian's prometheus package)"
	echo "alert rules: not checked (no promtool)"
fi
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["panels"], "no panels"; print("dashboard:", len(d["panels"]), "panels")' deploy/grafana/homa-dpdk.json
"$work/homa-dpdk" man "$work/homa-dpdk.8"
cmp -s "$work/homa-dpdk.8" deploy/man/homa-dpdk.8 || fail "deploy/man/homa-dpdk.8 is stale: go run ./cmd/homa-dpdk man deploy/man/homa-dpdk.8"
if command -v groff >/dev/null; then
	warn=$(groff -man -Tutf8 -ww -z deploy/man/homa-dpdk.8 2>&1) || fail "groff: $warn"
	[ -z "$warn" ] || fail "groff warns about deploy/man/homa-dpdk.8: $warn"
	echo "man page: renders"
fi
