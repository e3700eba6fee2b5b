#!/usr/bin/env bash
# Runs every go fuzz target of the repository for FUZZTIME each (default 10s), with the seed
# corpus the targets add from testdata/ and any failing inputs kept in each package's
# testdata/fuzz/. A failing input stops the run and prints how to reproduce it.
#
# Go 1.26's fuzz coordinator can end a duration-bound run with a bare "context deadline
# exceeded" when a worker is still busy as -fuzztime expires (go.dev/issue/75804, fixed in
# Go 1.27). Such a run found nothing: no input is written and no test failure is printed. Only
# that exact signature is tolerated, and only after the target's whole corpus (seeds plus
# testdata/fuzz) replays clean; anything else fails the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
fuzztime="${FUZZTIME:-10s}"
go="${GO:-go}"
n=0
raced=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $($go list ./...); do
	targets=$($go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for t in $targets; do
		echo "fuzz: $pkg $t for $fuzztime"
		if $go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
			n=$((n + 1))
			continue
		fi
		# The race's signature: the FAIL line followed by the deadline and nothing that names
		# an input, a panic or a t.Error/t.Fatal.
		if grep -q '^    context deadline exceeded$' "$log" &&
			! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:|\.go:[0-9]+: ' "$log"; then
			echo "fuzz: $t ended by the fuzz coordinator's deadline race (go.dev/issue/75804); replaying its corpus"
			$go test -count=1 -run "^${t}\$" "$pkg"
			n=$((n + 1))
			raced=$((raced + 1))
			continue
		fi
		echo "fuzz: $t failed; replay with: go test -run '^${t}\$' $pkg" >&2
		exit 1
	done
done
echo "fuzz: $n passed, 0 failed ($raced cut short by go.dev/issue/75804, corpus replayed)"
