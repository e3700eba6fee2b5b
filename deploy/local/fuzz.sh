#!/usr/bin/env bash
# Runs every go fuzz target of the repository for FUZZTIME each (default 10s), with the seed
# corpus the targets add from testdata/ and any failing inputs kept in each package's
# testdata/fuzz/. A failure stops the run and prints how to reproduce it.
set -euo pipefail
cd "$(dirname "$0")/../.."
fuzztime="${FUZZTIME:-10s}"
go="${GO:-go}"
n=0
for pkg in $($go list ./...); do
	targets=$($go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for t in $targets; do
		echo "fuzz: $pkg $t for $fuzztime"
		$go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" "$pkg"
		n=$((n + 1))
	done
done
echo "fuzz: $n passed, 0 failed"   # each target ran $fuzztime without a failing input
