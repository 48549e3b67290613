#!/usr/bin/env bash
# timed.sh LABEL CMD...: runs CMD and prints "timing: LABEL Ns" when it
# ends, passed or failed, so a run's log says where its time went
# (.ci/run collects these lines and go test's per-package times).
set -uo pipefail
label="$1"
shift
start="$(date +%s)"
"$@"
rc=$?
status=ok
((rc == 0)) || status="FAILED (exit ${rc})"
printf 'timing: %s %ss %s\n' "${label}" "$(($(date +%s) - start))" "${status}"
exit "${rc}"
