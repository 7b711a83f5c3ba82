#!/usr/bin/env bash
# Report (never fail on) large code: source files over MAX_FILE_LINES lines and functions over
# MAX_FUNCTION_LINES lines, in the C++/CUDA sources tracked by git under core cuda gui apps tests tools.
#   tools/lint/size_report.sh     MAX_FILE_LINES=800 MAX_FUNCTION_LINES=80 by default (env overrides)
# Function extents come from Universal Ctags (its `end:` field; Debian package universal-ctags,
# installed by scripts/install-deps.sh). Without it the function part says so. Always exits 0.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 0

MAX_FILE_LINES=${MAX_FILE_LINES:-800}
MAX_FUNCTION_LINES=${MAX_FUNCTION_LINES:-80}
DIRS=(core cuda gui apps tests tools)
EXT_RE='\.(cpp|h|cu|cuh|inc)$'
# Generated files (not written by hand, so not worth splitting).
GENERATED_RE='^core/tokenizer/unicode_tables\.inc$'

mapfile -t files < <(git ls-files -- "${DIRS[@]}" 2>/dev/null | grep -E "$EXT_RE" | grep -vE "$GENERATED_RE")
if [ ${#files[@]} -eq 0 ]; then
  echo "size_report: no sources found (not a git checkout?)"
  exit 0
fi

# ---- files ----
big_files=$(wc -l -- "${files[@]}" 2>/dev/null | awk -v max="$MAX_FILE_LINES" '$2 != "total" && $1 > max' |
            sort -k1,1nr)
n_big=$(printf '%s' "$big_files" | grep -c . || true)
echo "Files over $MAX_FILE_LINES lines: $n_big (of ${#files[@]} files)"
[ -z "$big_files" ] || printf '%s\n' "$big_files" | awk '{printf "  %6d  %s\n", $1, $2}'

# ---- functions ----
if ! command -v ctags >/dev/null 2>&1 || ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "Functions over $MAX_FUNCTION_LINES lines: not measured: Universal Ctags is not installed" \
       "(sudo apt-get install universal-ctags, or bash scripts/install-deps.sh)"
  exit 0
fi
# Tags of function definitions (kind f) as "name<TAB>file<TAB>line;\"<TAB>f<TAB>key:value...":
# .inc fragments parse as C++, .cu/.cuh with ctags's CUDA parser; __launch_bounds__(...) is defined
# away so that a kernel's tag is its own name. Lambdas (ctags's __anon... functions) count towards
# the function they are in and are not listed themselves.
tags=$(printf '%s\n' "${files[@]}" |
       ctags -L - -f - --sort=no --excmd=number --fields=+ne --languages=C++,CUDA --langmap=C++:+.inc \
             --kinds-C++=f --kinds-CUDA=f -D '__launch_bounds__(...)=' 2>/dev/null)
big_funcs=$(printf '%s\n' "$tags" | awk -F'\t' -v max="$MAX_FUNCTION_LINES" '
  NF >= 4 && $1 !~ /^__anon/ {
    start = 0; end = 0; scope = ""
    for (i = 4; i <= NF; i++) {
      if ($i ~ /^line:/) start = substr($i, 6)
      else if ($i ~ /^end:/) end = substr($i, 5)
      else if ($i ~ /^(class|struct|union|namespace|function):/) scope = substr($i, index($i, ":") + 1)
    }
    if (start == 0 || end == 0) next
    n = end - start + 1
    if (n <= max) next
    gsub(/(^|::)__anon[0-9a-f]+/, "", scope); sub(/^::/, "", scope)
    name = (scope == "" ? "" : scope "::") $1
    printf "%d\t%s:%d\t%s\n", n, $2, start, name
  }' | sort -t$'\t' -k1,1nr -k2,2)
# gtest bodies are tagged TEST/TEST_F/TEST_P: name them by their first line instead.
named=""
while IFS=$'\t' read -r n loc name; do
  [ -n "$n" ] || continue
  case "${name##*::}" in
    TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)
      line=$(sed -n "${loc##*:}p" "${loc%:*}")
      sig=$(printf '%s' "$line" | sed -n 's/^[[:space:]]*\([A-Z_]*([^)]*)\).*/\1/p')
      [ -z "$sig" ] || name="$sig" ;;
  esac
  named+=$(printf '  %6d  %s  %s' "$n" "$loc" "$name")$'\n'
done <<<"$big_funcs"
n_funcs=$(printf '%s\n' "$tags" | awk -F'\t' 'NF >= 4 && $1 !~ /^__anon/' | wc -l)
n_big=$(printf '%s' "$named" | grep -c . || true)
echo "Functions over $MAX_FUNCTION_LINES lines: $n_big (of $n_funcs functions)"
[ -z "$named" ] || printf '%s' "$named"
exit 0
