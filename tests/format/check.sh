#!/usr/bin/env bash
# The formatter on changed lines only: runs clang-format 14 (.clang-format) on the C++ lines that
# differ between BASE and HEAD and fails listing what it would change. The tree as a whole is not
# reformatted (.clang-format says why), so only lines a change touches are held to it.
#
# Usage: tests/format/check.sh [BASE [HEAD]]     (HEAD defaults to HEAD)
#        tests/format/check.sh --fix [BASE]      formats the lines the working tree changes from
#                                                BASE, in place
# BASE, when not given (nor ATTN_FORMAT_BASE): the newest commit on HEAD's first-parent line
# committed at least ATTN_FORMAT_HOURS (default 4) hours before HEAD, the before-stop hook's window
# anchored at HEAD's commit time rather than the clock, so a re-run gives the same verdict. With
# no such commit (a young or shallow history) the check is skipped.
#
# Like `git clang-format --diff BASE HEAD`, but the changed lines come from `git diff -M`: a file
# moved and edited is checked on its edited lines only, not as a new file (git clang-format's
# diff-tree sees every line of it as new). Lines between `// clang-format off` and `on` (the
# hand-laid Boost.ProgramOptions chains and run_train_verb initialisers in apps/) are left alone
# by clang-format itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-14}

fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
if ! git rev-parse --verify -q HEAD >/dev/null; then
  echo "format check: not a git checkout with commits; skipped"
  exit 0
fi
head=$(git rev-parse --verify "${2:-HEAD}^{commit}")
base=${1:-${ATTN_FORMAT_BASE:-}}
if [ -z "$base" ]; then
  hours=${ATTN_FORMAT_HOURS:-4}
  cutoff=$(( $(git log -1 --format=%ct "$head") - hours * 3600 ))
  base=$(git rev-list -1 --first-parent --before="@$cutoff" "$head")
  if [ -z "$base" ]; then
    echo "format check: no commit ${hours} h older than $(git rev-parse --short "$head"); skipped"
    exit 0
  fi
fi
base=$(git rev-parse --verify "$base^{commit}")
command -v "$CLANG_FORMAT" >/dev/null || { echo "format check: $CLANG_FORMAT not found (make -f Makefile.scripts format-deps)" >&2; exit 2; }

# path<TAB>first:last ... of every C++ file's added or changed lines in HEAD (--fix: in the
# working tree), against BASE.
changed_ranges() {
  git diff -M --no-ext-diff --diff-filter=AMRC -U0 "$base" "$@" -- '*.cpp' '*.hpp' '*.h' '*.cc' '*.cxx' '*.hh' |
    awk '/^\+\+\+ b\// { if (f != "") print f "\t" r; f = substr($0, 7); r = ""; next }
         /^@@ / { split($3, a, ","); n = (a[2] == "") ? 1 : a[2] + 0; s = substr(a[1], 2) + 0;
                  if (n > 0) r = r " " s ":" (s + n - 1) }
         END { if (f != "") print f "\t" r }' | awk -F'\t' '$2 != ""'
}

# The code closes a namespace with `}  // namespace x` (two spaces, every one of them); clang-format
# 14 puts SpacesBeforeTrailingComments (3, the code's other trailing comments) there too. The
# code's form is kept.
namespace_comments() { sed -E 's#^\}   // namespace#}  // namespace#'; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# clang-format FILE SPANS: FILE with the lines of SPANS formatted, on standard output.
format_lines() {
  local args=() span
  for span in $2; do args+=("--lines=$span"); done
  "$CLANG_FORMAT" --style=file --assume-filename="$1" "${args[@]}" | namespace_comments
}

if [ "$fix" = 1 ]; then
  # Formatting a line can change the lines next to it; a few passes settle it.
  for pass in 1 2 3 4; do
    changed=0
    while IFS=$'\t' read -r path spans; do
      [ -n "$path" ] && [ -f "$path" ] && [ ! -L "$path" ] || continue
      format_lines "$path" "$spans" <"$path" >"$tmp/new"
      cmp -s "$tmp/new" "$path" || { cat "$tmp/new" >"$path"; changed=$((changed + 1)); }
    done <<<"$(changed_ranges)"
    echo "format check --fix, pass $pass: $changed files changed"
    [ "$changed" = 0 ] && break
  done
  exit 0
fi

ranges=$(changed_ranges "$head")
echo "format check: C++ lines changed in $(git rev-parse --short "$base")..$(git rev-parse --short "$head") ($(git log -1 --format=%cd --date=iso "$base") on)"
[ -n "$ranges" ] || { echo "format check: no C++ lines changed"; exit 0; }
bad=0 files=0 lines=0
while IFS=$'\t' read -r path spans; do
  [ -L "$path" ] && continue
  files=$((files + 1))
  for span in $spans; do lines=$(( lines + ${span#*:} - ${span%%:*} + 1 )); done
  git show "$head:$path" >"$tmp/old"
  format_lines "$path" "$spans" <"$tmp/old" >"$tmp/new"
  if ! cmp -s "$tmp/old" "$tmp/new"; then
    bad=$((bad + 1))
    diff -u --label "a/$path" --label "b/$path (clang-format)" "$tmp/old" "$tmp/new" || true
  fi
done <<<"$ranges"

if [ "$bad" -gt 0 ]; then
  echo "format check: FAILED: clang-format would change $bad of $files changed C++ files (diffs above;" \
       "tests/format/check.sh --fix $(git rev-parse --short "$base") formats them in the working tree)"
  exit 1
fi
echo "format check: $lines changed lines in $files C++ files, formatted"
