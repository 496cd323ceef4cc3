#!/usr/bin/env bash
# Checks that every repository path a Markdown file names in a code span
# (`libpool/src/x.cpp`, `actors/include/pool/y.hpp`, `tests/z.cpp` ...)
# exists, so an index of "behaviour -> file" stays true as files move.
# Paths are the spans that start with one of the project's top folders;
# a span with a wildcard or a placeholder (`*`, `<`) names no one file.
#
# usage: check_paths.sh ROOT FILE.md...   Prints every missing path; exits
#        1 if there is any.
set -euo pipefail
export LC_ALL=C.UTF-8
root=$1
shift
missing=0
checked=0
for file in "$@"; do
  while IFS= read -r path; do
    case $path in *'*'* | *'<'* | *'{'*) continue ;; esac
    checked=$((checked + 1))
    if [[ ! -e $root/$path ]]; then
      echo "$file: names $path, which does not exist"
      missing=1
    fi
  done < <(grep -oE '`(libpool|actors|apps|tests|bench|docs|cmake|examples)/[^` ]+`' "$file" |
             tr -d '`' | sort -u)
done
[ "$missing" -eq 0 ] || exit 1
echo "check_paths: the $checked paths named in $# file(s) exist"
