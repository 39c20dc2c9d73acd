#!/usr/bin/env bash
# doc-links.sh -- every document a tracked file names exists in the repository:
#   1. each reference to a Markdown file by name (NAME.md, or some/path/NAME.md) in a
#      tracked file (CHANGELOG.md aside: it records history) is a tracked file, named from
#      the repository root, from the referring file's folder, or, for a bare name, by its
#      file name anywhere in the tree;
#   2. each relative link [text](target#anchor) in a tracked Markdown file leads to a
#      tracked file or folder, and an anchor to a heading or an id="..." of the target;
#   3. each section quoted after docs/MATH.md (MATH.md "Section name") is a heading there.
# Paths assembled at run time ($VAR/..., %s/...) are checked by their file name.
# Not documents of this repository, and so not checked: summary.md (the table that
# `dpgd sweep --table` and `dpgd plot` write into a run folder) and EXTERNAL below.
set -euo pipefail
cd "$(dirname "$0")/../.."

EXTERNAL=(
  examples/mnist_README.md # in Opacus' repository (configs/dpsgd/opacus-eps116.ini)
)
SELF=tests/tools/doc-links.sh # its comments name made-up documents

fail=0
err() {
  echo "doc-links.sh: $*" >&2
  fail=1
}

declare -A is_tracked is_dir has_base
while IFS= read -r f; do
  is_tracked["$f"]=1
  has_base["${f##*/}"]=1
  d="$f"
  while [[ "$d" == */* ]]; do
    d="${d%/*}"
    is_dir["$d"]=1
  done
done < <(git ls-files)

# NORM = $1 with . and .. resolved (/outside when it leaves the repository).
normalize() {
  local IFS=/ part
  local -a out=()
  for part in $1; do
    case "$part" in
    "" | .) ;;
    ..) if ((${#out[@]})); then unset 'out[${#out[@]}-1]'; else
      NORM=/outside
      return
    fi ;;
    *) out+=("$part") ;;
    esac
  done
  NORM="${out[*]}"
}

# GitHub's heading anchors (lower case, punctuation dropped, spaces to hyphens) and the
# explicit id="..." of a Markdown file, one a line.
anchors_of() {
  sed -n 's/^#\{1,6\} \{1,\}//p' "$1" | tr 'A-Z' 'a-z' |
    sed "s/[][!\"#\$%&'()*+,./:;<=>?@\\\\^\`{|}~]//g; s/ /-/g"
  grep -o 'id="[^"]*"' "$1" | sed 's/^id="//; s/"$//' || true
}

# 1. References NAME.md in every tracked text file (one git grep for the whole tree).
n_refs=0
while IFS= read -r hit; do
  f="${hit%%:*}"
  rest="${hit#*:}"
  ref="${rest#*:}"
  ref="${ref%.md*}.md"  # the character after the name, if any
  ref="${ref##*\\?}"    # a C escape before the name (\nREADME.md)
  ref="${ref#./}"
  [ -n "$ref" ] || continue
  n_refs=$((n_refs + 1))
  base="${ref##*/}"
  [ "$base" = summary.md ] && continue
  skip=0
  for x in "${EXTERNAL[@]}"; do [ "$ref" = "$x" ] && skip=1; done
  ((skip)) && continue
  dir=.
  [[ "$f" == */* ]] && dir="${f%/*}"
  if [[ "$ref" == *'$'* || "$ref" == *%* || "$ref" == *'{'* ]]; then
    [ -n "${has_base[$base]:-}" ] || err "$f: $ref: no tracked file $base"
  elif [[ "$ref" != */* ]]; then
    [ -n "${has_base[$ref]:-}" ] || err "$f: $ref: no tracked file of that name"
  else
    normalize "$ref"
    a="$NORM"
    normalize "$dir/$ref"
    [ -n "${is_tracked[$a]:-}" ] || [ -n "${is_tracked[$NORM]:-}" ] ||
      err "$f: $ref: no such tracked file (from the root or from $dir/)"
  fi
done < <(git grep -I -noE '[A-Za-z0-9_./${}%\\-]*[A-Za-z0-9_}-]\.md([^A-Za-z0-9_]|$)' -- . \
  ':!CHANGELOG.md' ":!$SELF" || true)

# 2. Relative links in tracked Markdown files.
n_links=0
declare -A anchors_cache
while IFS= read -r hit; do
  f="${hit%%:*}"
  rest="${hit#*:}"
  link="${rest#*:](}"
  link="${link%)}"
  target="${link%%#*}"
  anchor=""
  [[ "$link" == *'#'* ]] && anchor="${link#*#}"
  case "$target" in http:* | https:* | mailto:*) continue ;; esac
  n_links=$((n_links + 1))
  dir=.
  [[ "$f" == */* ]] && dir="${f%/*}"
  path="$f"
  if [ -n "$target" ]; then
    normalize "$dir/$target"
    path="$NORM"
    if [ -z "${is_tracked[$path]:-}" ] && [ -z "${is_dir[$path]:-}" ]; then
      err "$f: link ($link): $path is not a tracked file or folder"
      continue
    fi
  fi
  if [ -n "$anchor" ] && [[ "$path" == *.md ]]; then
    [ -n "${anchors_cache[$path]:-}" ] || anchors_cache["$path"]=" $(anchors_of "$path" | tr '\n' ' ')"
    [[ "${anchors_cache[$path]}" == *" $anchor "* ]] ||
      err "$f: link ($link): no heading or id \"$anchor\" in $path"
  fi
done < <(git grep -noE '\]\([^) ]+\)' -- '*.md' ':!CHANGELOG.md' || true)

# 3. Sections quoted after MATH.md are headings of docs/MATH.md.
if [ -f docs/MATH.md ]; then
  headings="$(grep -E '^#{1,6} ' docs/MATH.md)"
  while IFS= read -r hit; do # file:line:MATH.md "Name"
    where="${hit%%:*}"
    rest="${hit#*:}"
    where="$where:${rest%%:*}"
    name="${hit#*\"}"
    name="${name%\"}"
    name="${name%\\}"
    [[ "$headings" == *"$name"* ]] || err "$where: docs/MATH.md has no section \"$name\""
  done < <(git grep -noE 'MATH\.md`? \\?"[^"\\]+\\?"' -- . ':!CHANGELOG.md' ":!$SELF" || true)
fi

if ((fail)); then
  echo "doc-links.sh: FAILED (fix the reference, or add the document it names)" >&2
  exit 1
fi
echo "doc-links.sh: $n_refs references to .md files and $n_links relative links resolve"
