#!/usr/bin/env bash
# test_bench_norm.sh — `tilec bench softmax` and `tilec bench norm`: --quick runs print one table
# per operation and size with tilec's row checked right (no WRONG or FAILED row), in f32 and bf16,
# with and without the peers (PyTorch's rows where torch imports); --help lists both suites; a bad size is a usage error. A few s.
# Run by CTest as: bash test_bench_norm.sh /path/to/tilec. Last line: "N passed, M failed".
set -u

. "$(dirname "$0")/cli_util.sh" "$@"

run_peers() { # oneDNN's OpenMP threads upset LeakSanitizer at exit (see test_bench_cli.sh)
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$TILEC" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

run bench --help
grep -q "^  softmax " "$tmp/out" && grep -q "^  norm " "$tmp/out"
ok "bench --help lists softmax and norm" $?

run bench softmax --quick --peers none
ok "bench softmax --quick --peers none exits 0 (exit $rc)" $rc
[ "$(grep -c '^softmax y = softmax(x), last axis, f32, ' "$tmp/out")" = 2 ]
ok "softmax: one table per quick size (2)" $?
grep -q "^  tilec  .*checked: rel. error" "$tmp/out" && ! grep -q "WRONG\|FAILED" "$tmp/out"
ok "softmax: tilec checked, no WRONG or FAILED row" $?

run_peers bench norm --quick --dtype bf16 --sizes 7x300
ok "bench norm --quick --dtype bf16 exits 0 (exit $rc)" $rc
grep -q "^norm y = layernorm(x)\*g + b, bf16, 7x300" "$tmp/out" && grep -q "^norm y = x/rms(x)\*g, bf16, 7x300" "$tmp/out"
ok "norm: layernorm and rmsnorm tables" $?
! grep -q "WRONG\|FAILED" "$tmp/out"
ok "norm bf16: no WRONG or FAILED row" $?
grep -q "no oneDNN row: oneDNN 2.6 has no RMS normalisation" "$tmp/out"
ok "norm: rmsnorm says it has no oneDNN peer" $?

# PyTorch rows only where python3 imports torch (not in CI): timed and checked in their process
if python3 -c 'import torch' >/dev/null 2>&1; then
  grep -q "^  torch layer_norm .*own process" "$tmp/out" && grep -q "^  torch rms_norm .*own process" "$tmp/out"
  ok "norm bf16: torch layer_norm and rms_norm rows, timed" $?
  run_peers bench softmax --quick --peers torch --sizes 5x77
  [ "$rc" = 0 ] && grep -q "^  torch softmax .*own process" "$tmp/out" && ! grep -q "WRONG\|FAILED" "$tmp/out"
  ok "softmax f32 --peers torch: a torch row, timed (exit $rc)" $?
else
  echo "    (torch not importable: no PyTorch rows to check)"
fi

run bench softmax --sizes 12
[ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]
ok "bench softmax --sizes 12 is a usage error (exit $rc)" $?

finish tools_test_bench_norm
