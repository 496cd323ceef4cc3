#!/usr/bin/env bash
# Runs chosen par_* functions of GNU parallel's own test suite with
# `parallel` being poolrun, and prints "N passed, M failed" (issue 46).
# The suite is not part of this project (GPL): give a local copy of GNU
# parallel's source tree (version 20221122, as Debian 12 ships).
#
#   tests/poolrun/run_gnu_suite.sh SRC_DIR [FUNCTION...]   # default: every par_*
#
# POOLRUN (default: build/apps/poolrun/poolrun) is the binary; TIMEOUT
# (default 60) the seconds one function may take; FILES (default
# "0.3s 1s 3s 10s") which of the four files. Each file's count is
# printed, and with LIST=1 each pass too. Each function runs as
# the suite's Start.sh runs it ('FUNC 2>&1', /usr/bin shown as /bin) and
# its lines (run from testsuite/ with LANG=C, $HOME shown as ~), each
# prefixed with the function's name and a tab, are compared
# with testsuite/wanted-results/<file>. Failures are listed with a diff
# under $OUT (default /tmp/poolrun-suite).
set -uo pipefail
src=${1:?usage: run_gnu_suite SRC_DIR [FUNCTION...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
poolrun=$(realpath "${POOLRUN:-$root/build/apps/poolrun/poolrun}")
timeout_s=${TIMEOUT:-60}
out=${OUT:-/tmp/poolrun-suite}
mkdir -p "$out/bin"
# Installed as `parallel`, as a user of the drop-in installs it (its
# messages then start with "parallel:"); a copy, so a rebuild during the
# run changes nothing.
cp "$poolrun" "$out/bin/parallel"
tests=$src/testsuite/tests-to-run
wanted=$src/testsuite/wanted-results
passed=0
failed=0
for part in ${FILES:-0.3s 1s 3s 10s}; do
  file=$tests/parallel-local-$part.sh
  [ -f "$file" ] || continue
  name=$(basename "$file" .sh)
  file_passed=0
  file_failed=0
  # The functions the file defines (its own driver line is not run: the
  # 'parallel' it calls with --joblog /tmp/jl-... only swallows its input).
  functions=$(bash -c '
    parallel() { cat >/dev/null; }
    source "$1" >/dev/null 2>&1
    compgen -A function | grep "^par_"' _ "$file" | LC_ALL=C sort)
  for fn in $functions; do
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$fn"; then
      continue
    fi
    expected=$(grep -a "^$fn	" "$wanted/$name" 2>/dev/null)
    # As Start.sh: from testsuite/, LANG=C, a TMPDIR per file, $HOME as ~.
    mkdir -p "/tmp/$name-tmpdir"
    actual=$(cd "$src/testsuite" && LANG=C LC_ALL=C TMPDIR="/tmp/$name-tmpdir" \
      POOLRUN="$out/bin/parallel" timeout "$timeout_s" bash -c '
      parallel() {
        case " $* " in
          *" --joblog /tmp/jl-"*) cat >/dev/null; return 0 ;;
        esac
        "$POOLRUN" "$@"
      }
      export -f parallel
      source "$1" >/dev/null 2>&1
      "$2" 2>&1 | perl -pe "s:/usr/bin:/bin:g"' _ "$file" "$fn" |
      perl -pe 's:'"$HOME"':~:g' | sed "s/^/$fn	/")
    if [ "$expected" = "$actual" ]; then
      passed=$((passed + 1))
      file_passed=$((file_passed + 1))
      [ -n "${LIST:-}" ] && echo "passed: $name $fn"
    else
      failed=$((failed + 1))
      file_failed=$((file_failed + 1))
      diff <(printf '%s\n' "$expected") <(printf '%s\n' "$actual") \
        >"$out/$fn.diff"
      echo "failed: $name $fn ($out/$fn.diff)"
    fi
  done
  echo "$name: $file_passed passed, $file_failed failed"
done
echo "$passed passed, $failed failed"
