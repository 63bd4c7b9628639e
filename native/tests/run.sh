#!/bin/sh
# run.sh: runs each test program; exit status 77 is "skipped".
pass=0 fail=0 skip=0
for t in "$@"; do
	out=$("$t" 2>&1)
	rc=$?
	name=$(basename "$t")
	case $rc in
	0) pass=$((pass + 1)); echo "PASS $name" ;;
	77) skip=$((skip + 1)); echo "SKIP $name: $(echo "$out" | tail -1)" ;;
	*) fail=$((fail + 1)); echo "FAIL $name (exit $rc)"; echo "$out" | tail -30 | sed 's/^/    /' ;;
	esac
done
echo "libhoma tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
