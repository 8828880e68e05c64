# cli_util.sh — what the command-line tests share; sourced as
#   . "$(dirname "$0")/cli_util.sh" "$@"
# It takes the tilec binary from $1 (or $TILEC_TOOL), unsets TILEC_ISA / TILEC_INTERPRET, makes a
# temporary dir $tmp (removed at exit), and defines:
#   ok NAME RESULT     one check (RESULT 0 passes); a failure prints NAME and the last output
#   run ARGS...        runs tilec: stdout in $tmp/out, stderr in $tmp/err, exit code in $rc
#   one_line_error     stderr is exactly one line and stdout is empty
#   finish NAME        prints "NAME: N passed, M failed" and exits non-zero on a failure
# and $have_python (1 when python3 exists, for JSON checks).
TILEC=${1:-${TILEC_TOOL:-}}
if [ -z "$TILEC" ] || [ ! -x "$TILEC" ]; then
  echo "usage: bash $(basename "$0") /path/to/tilec" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
unset TILEC_ISA TILEC_INTERPRET

pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() {
  if [ "$2" = 0 ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $1" >&2
    [ -s "$tmp/out" ] && sed 's/^/    out: /' "$tmp/out" | head -30 >&2
    [ -s "$tmp/err" ] && sed 's/^/    err: /' "$tmp/err" | head -5 >&2
  fi
}

run() {
  "$TILEC" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

one_line_error() {
  [ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ]
}

finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit $?
}

have_python=0
if command -v python3 >/dev/null 2>&1; then have_python=1; fi
