#!/usr/bin/env bash
# Prints why each failed test failed, from a `go test -json` file: the last
# lines of output of every failed test that has no failed subtest of its
# own (the parent TestCluster's own log is long; the scenario that failed
# says why in a few lines). The e2e (Makefile) calls it after a failed run,
# so that the tail of a long CI log carries the reason.
# usage: scripts/test-failures.sh FILE.json [LINES]
set -euo pipefail
file=$1
lines=${2:-40}
jq -rs --argjson n "$lines" '
	[.[] | select(.Test != null and .Action == "fail") | .Test] as $failed
	| [$failed[] as $t | select(all($failed[]; startswith($t + "/") | not)) | $t] as $leaves
	| . as $all
	| $leaves[] as $t
	| "--- why \($t) failed (its last \($n) lines):\n"
	  + ([$all[] | select(.Test == $t and .Action == "output") | .Output] | .[-$n:] | join(""))
' "$file"
