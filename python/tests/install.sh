#!/usr/bin/env bash
# The package installs offline with each pip on the machine: a fresh venv
# per Python (Debian's /usr/bin/python3, and the python3 on PATH when it is
# another, e.g. pyenv's), `pip install --no-index ./python` with build
# isolation on (the in-tree backend needs nothing), then the package's
# tests run against the installed copy (HOMA_TEST_INSTALLED=1; the daemon
# round trips skip without HOMA_SOCKET). Also an editable install (-e).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd) # python/
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pythons=(/usr/bin/python3)
other=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
[ -n "$other" ] && [ "$(readlink -f "$other")" != "$(readlink -f /usr/bin/python3)" ] && pythons+=("$other")
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
n=0
for py in "${pythons[@]}"; do
	n=$((n + 1))
	v=$work/venv$n
	"$py" -m venv "$v"
	echo "== $py ($("$v/bin/pip" --version | cut -d' ' -f1-2)): pip install --no-index ./python"
	"$v/bin/pip" install -q --no-index "$here"
	(cd "$work" && "$v/bin/python" -c 'import homa_dpdk, sys; assert homa_dpdk.__file__.startswith(sys.prefix), homa_dpdk.__file__; print("installed:", homa_dpdk.__file__)')
	if ! out=$(cd "$work" && HOMA_TEST_INSTALLED=1 "$v/bin/python" -m unittest discover -s "$here/tests" -t "$here/tests" 2>&1); then
		echo "$out" # all of it: why, not only that it failed
		exit 1
	fi
	echo "$out" | tail -3
	"$v/bin/pip" uninstall -q -y homa-dpdk
	echo "== $py: pip install --no-index -e ./python"
	"$v/bin/pip" install -q --no-index -e "$here"
	(cd "$work" && "$v/bin/python" -c 'import homa_dpdk, os, sys; d = os.path.dirname(os.path.dirname(homa_dpdk.__file__)); assert d == sys.argv[1], d; print("editable:", homa_dpdk.__file__)' "$here")
done
