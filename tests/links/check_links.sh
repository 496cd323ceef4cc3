#!/usr/bin/env bash
# Checks that every relative link in the given Markdown files resolves: the
# file or directory exists and, for a link with #anchor into a Markdown
# file (or into the same file), a heading with that anchor exists, with
# anchors made as GitHub makes them (lower case; letters, digits, spaces,
# '-' and '_' kept; spaces become '-'; repeats get -1, -2, ...). Links
# inside code (fenced blocks, `spans`) and to other sites are not links.
#
# usage: check_links.sh FILE.md|DIR...   A directory stands for its
#        README.md, CHANGELOG.md and docs/*.md (CTest docs.links passes the
#        source tree). Prints every broken link; exits 1 if there is any.
# Bash, grep and sed only: they are on every Debian machine (python3 is not).
set -euo pipefail
export LC_ALL=C.UTF-8

# The file's text outside fenced code blocks, inline code spans removed.
prose() {
  sed -e '/^[[:space:]]*```/,/^[[:space:]]*```/d' "$1" | sed -e 's/`[^`]*`//g'
}

# The anchors of the file's headings, one per line.
anchors() {
  declare -A seen=()
  local line text slug
  while IFS= read -r line; do
    text=$(sed -E -e 's/^#{1,6}[[:space:]]+//' -e 's/[[:space:]]+#+[[:space:]]*$//' \
      -e 's/\[([^]]*)\]\([^)]*\)/\1/g' -e 's/`//g' <<<"$line")
    slug=${text,,}
    slug=$(sed -E -e 's/[^[:alnum:] _-]//g' -e 's/ /-/g' <<<"$slug")
    if [[ -n ${seen[$slug]+x} ]]; then
      seen[$slug]=$((seen[$slug] + 1))
      echo "$slug-${seen[$slug]}"
    else
      seen[$slug]=0
      echo "$slug"
    fi
  done < <(sed -e '/^[[:space:]]*```/,/^[[:space:]]*```/d' "$1" | grep -E '^#{1,6}[[:space:]]')
  # Explicit anchors: <a id="x"> or <a name="x">.
  grep -oE '<a (id|name)="[^"]+"' "$1" | sed -E 's/.*="([^"]+)"/\1/' || true
}

files=()
for arg in "$@"; do
  if [[ -d $arg ]]; then
    for f in "$arg/README.md" "$arg/CHANGELOG.md" "$arg"/docs/*.md; do
      [[ -f $f ]] && files+=("$f")
    done
  else
    files+=("$arg")
  fi
done

broken=0
declare -A headings=() # file -> its anchors
for file in "${files[@]}"; do
  dir=$(dirname "$file")
  # [text](target) and ![alt](target); reference definitions [x]: target.
  while IFS= read -r target; do
    target=${target%% *} # [x](path "title")
    case $target in
      http://* | https://* | mailto:* | ftp://* | '') continue ;;
    esac
    path=${target%%#*}
    anchor=
    [[ $target == *#* ]] && anchor=${target#*#}
    resolved=$file
    if [[ -n $path ]]; then
      resolved=$dir/$path
      if [[ ! -e $resolved ]]; then
        echo "$file: broken link ($path does not exist): $target"
        broken=1
        continue
      fi
    fi
    if [[ -n $anchor && $resolved == *.md && -f $resolved ]]; then
      if [[ -z ${headings[$resolved]+x} ]]; then
        headings[$resolved]=$(anchors "$resolved")
      fi
      if ! grep -qxF -- "$anchor" <<<"${headings[$resolved]}"; then
        echo "$file: broken link (no heading #$anchor in $resolved): $target"
        broken=1
      fi
    fi
  done < <(prose "$file" | grep -oE '\]\([^)[:space:]]+( "[^"]*")?\)' | sed -E 's/^\]\((.*)\)$/\1/'
           prose "$file" | grep -oE '^\[[^]]+\]:[[:space:]]*[^[:space:]]+' | sed -E 's/^\[[^]]+\]:[[:space:]]*//')
done
if [ "$broken" -ne 0 ]; then
  exit 1
fi
echo "check_links: every relative link in ${#files[@]} files resolves"
