#!/usr/bin/env bash
# poolrun demo: six commands, 3 at a time, a retry, a timeout, --bar, joblog.
# Usage: apps/poolrun/demo.sh [path/to/poolrun]   (runs in a temp dir)
set -euo pipefail

poolrun=${1:-poolrun}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/commands" <<'COMMANDS'
echo "hello from job 1"; sleep 0.2
echo "job 2 writes to stderr" >&2; sleep 0.1
echo "job 3 exits 3"; exit 3
for i in 1 2 3; do echo "job 4 line $i"; sleep 0.05; done
n=$(cat counter 2>/dev/null || echo 0); echo $((n + 1)) >counter; echo "job 5 attempt $((n + 1))"; [ "$n" -ge 1 ]
echo "job 6 sleeps too long"; sleep 10
COMMANDS

cd "$work"
set +e
"$poolrun" -j 3 --retries 2 --retry-delay 50ms --timeout 1s --bar --summary \
  --joblog "$work/joblog" -a commands
status=$?
set -e
echo "--- exit status: $status (failed commands: job 3 and job 6)"
echo "--- joblog:"
cat "$work/joblog"
[ "$status" -eq 2 ]
