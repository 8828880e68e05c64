#!/usr/bin/env bash
# test_bench_cli.sh — `tilec bench`: --quick runs print the header and one table per size, --csv
# writes a parseable CSV with the expected columns, --plot writes a PNG (or says gnuplot is
# missing), tilec's rows are right, and bad usage exits 2 with a one-line error; the gemm suite
# (GFLOP/s, --dtype) the same way. Peers are optional: nothing here depends on which are
# installed. About 20 s.
# Run by CTest as: bash test_bench_cli.sh /path/to/tilec. Last line: "N passed, M failed".
set -u

. "$(dirname "$0")/cli_util.sh" "$@"

# run_peers ARGS...: run, for invocations that load the peer libraries. In sanitizer builds,
# LeakSanitizer's exit-time scan crashes on the threads oneDNN's OpenMP runtime leaves behind
# ("Tracer caught signal 11"), so leak checking is off for these; the `--peers none` run below
# keeps it on for tilec's own code.
run_peers() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$TILEC" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

# usage_error ARGS...: exit 2, exactly one line on stderr, nothing on stdout.
usage_error() {
  run "$@"
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ]
  ok "tilec $* is a usage error (exit $rc)" $?
}

# --- help ---
run bench --help
ok "bench --help exits 0" $rc
grep -q "usage: tilec bench SUITE" "$tmp/out" && grep -q "copy" "$tmp/out" && grep -q "scale" "$tmp/out"
ok "bench --help names the suites" $?
run help bench
ok "tilec help bench exits 0" $rc
run --help
grep -q "^  bench " "$tmp/out"
ok "tilec --help lists bench" $?

# --- usage errors ---
usage_error bench
usage_error bench nosuch
grep -q "unknown suite 'nosuch'" "$tmp/err"
ok "unknown suite is named" $?
usage_error bench copy scale
usage_error bench copy --bogus
usage_error bench copy --sizes 12Q
usage_error bench copy --sizes 6
usage_error bench copy --sizes ""
usage_error bench copy --cold --warm
usage_error bench copy --threads 0
usage_error bench copy --csv

# --- copy --quick with a CSV ---
run_peers bench copy --quick --csv "$tmp/copy.csv"
ok "bench copy --quick --csv exits 0 (exit $rc)" $rc
grep -q "^tilec bench copy: " "$tmp/out"
ok "header line" $?
grep -q "^peers" "$tmp/out" && grep -q "environment: OMP_NUM_THREADS=" "$tmp/out"
ok "header states the peers and the OpenMP environment" $?
grep -q "^cold: " "$tmp/out"
ok "default is cold and says so" $?
[ "$(grep -c '^copy y = x, f32, ' "$tmp/out")" = 3 ]
ok "one table per quick size (3)" $?
[ "$(grep -c '^  tilec, blocks in place ' "$tmp/out")" = 3 ] && [ "$(grep -c '^  tilec, blocks staged ' "$tmp/out")" = 3 ]
ok "tilec's two rows in each table" $?
grep -q "^  C loop, [0-9]* thread" "$tmp/out" && grep -q "^  memcpy, 1 thread " "$tmp/out"
ok "the C loop and memcpy rows" $?
grep -E "^  tilec, blocks (in place|staged) +[0-9.]+ (ns|us|ms|s) \([0-9.]+ - [0-9.]+\) +[0-9.]+ +[0-9.]+" "$tmp/out" >/dev/null
ok "tilec rows have median (min - max), GB/s and a ratio" $?
! grep -q "WRONG\|FAILED" "$tmp/out"
ok "no WRONG or FAILED row" $?

if [ -s "$tmp/copy.csv" ]; then csv_ok=0; else csv_ok=1; fi
ok "--csv wrote a file" $csv_ok
head -1 "$tmp/copy.csv" | grep -qx "suite,op,size_bytes,size,dtype,mode,threads,impl,kind,status,median_s,min_s,max_s,reps,batch,moved_bytes,gbps,vs_best_peer,note"
ok "CSV header has the expected columns" $?
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/copy.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) >= 3 * 4, len(rows)                      # 3 sizes x (2 tilec + C loop + memcpy) at least
assert {r["size_bytes"] for r in rows} == {"4096", "65536", "1048576"}, {r["size_bytes"] for r in rows}
for r in rows:
    assert r["suite"] == "copy" and r["op"] == "copy" and r["dtype"] == "f32" and r["mode"] == "cold", r
    assert r["kind"] in ("tilec", "peer"), r
    assert r["status"] in ("ok", "WRONG", "failed", "skipped"), r
    if r["status"] == "ok":
        med, lo, hi = float(r["median_s"]), float(r["min_s"]), float(r["max_s"])
        assert 0 < lo <= med <= hi, r
        assert float(r["gbps"]) > 0 and int(r["reps"]) >= 1 and int(r["batch"]) >= 1, r
        assert abs(float(r["gbps"]) - float(r["moved_bytes"]) / med / 1e9) < 0.01 * float(r["gbps"]) + 0.01, r
tilec = [r for r in rows if r["kind"] == "tilec"]
assert len(tilec) == 6 and all(r["status"] == "ok" for r in tilec), tilec
EOF
  ok "CSV parses: fields, sizes, min <= median <= max, GB/s consistent, tilec rows ok" $?
fi

# --- scale, warm, one size, one thread, with a plot ---
run_peers bench scale --quick --warm --sizes 64K --threads 1 --plot "$tmp/scale.png"
ok "bench scale --quick --warm --sizes 64K --threads 1 --plot exits 0 (exit $rc)" $rc
grep -q "^warm: " "$tmp/out"
ok "warm runs say warm" $?
grep -q "^scale y = a\*x, f32, 64 KiB " "$tmp/out" && grep -q "^scale x \*= a (in place), f32, 64 KiB " "$tmp/out"
ok "scale prints y = a*x and x *= a" $?
grep -q "^  C loop, 1 thread " "$tmp/out"
ok "--threads 1 reaches the C loop" $?
! grep -q "WRONG\|FAILED" "$tmp/out"
ok "scale: no WRONG or FAILED row" $?
if command -v gnuplot >/dev/null 2>&1; then
  [ "$(head -c 4 "$tmp/scale.png" | od -An -c | tr -d ' \n')" = "211PNG" ]
  ok "--plot wrote a PNG" $?
else
  grep -q "gnuplot is not installed" "$tmp/err"
  ok "--plot without gnuplot says so" $?
fi

# --- no peers: only tilec, the C loop and memcpy (leak checks stay on in sanitizer builds) ---
run bench copy --quick --sizes 4K,64K --peers none
ok "bench copy --peers none exits 0 (exit $rc)" $rc
grep -q "openblas: not asked for (--peers)" "$tmp/out" && ! grep -q "^  openblas \|^  blis \|^  onednn " "$tmp/out"
ok "--peers none: no peer rows, and the header says why" $?
[ "$(grep -c '^  tilec, blocks ' "$tmp/out")" = 4 ]
ok "--peers none: tilec's rows still there" $?
usage_error bench copy --peers nosuch

# --- gemm: --quick without peers, GFLOP/s columns, --dtype, its CSV ---
usage_error bench gemm --dtype bogus
grep -q "dtype" "$tmp/err"
ok "--dtype bogus is named" $?
usage_error bench copy --dtype bf16
usage_error bench gemm --sizes 16x4096
usage_error bench gemm --sizes 0
run bench gemm --quick --peers none --csv "$tmp/gemm.csv"
ok "bench gemm --quick --peers none --csv exits 0 (exit $rc)" $rc
grep -q "^tilec bench gemm: " "$tmp/out" && grep -q "^peak: " "$tmp/out"
ok "gemm header line and peak line" $?
[ "$(grep -c '^gemm C = A B, f32, ' "$tmp/out")" = 3 ]
ok "gemm: one table per quick size (3)" $?
grep -E "^  tilec tl_matmul +[0-9.]+ (ns|us|ms|s) \([0-9.]+ - [0-9.]+\) +[0-9.]+ " "$tmp/out" >/dev/null &&
  [ "$(grep -c '^  tilec, B pre-packed ' "$tmp/out")" = 3 ]
ok "gemm: tilec's plain and pre-packed rows with a median and GFLOP/s" $?
! grep -q "^  .* \(WRONG\|FAILED\): " "$tmp/out" && ! grep -q "^  openblas \|^  blis \|^  onednn " "$tmp/out"
ok "gemm: no WRONG or FAILED row, no peer rows with --peers none" $?
head -1 "$tmp/gemm.csv" | grep -qx "suite,op,size_bytes,size,dtype,mode,threads,impl,kind,status,median_s,min_s,max_s,reps,batch,flops,gflops,pct_peak,vs_best_peer,note"
ok "gemm CSV header has the expected columns" $?
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/gemm.csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 6, len(rows)                          # 3 sizes x 2 tilec rows
assert {r["size"] for r in rows} == {"256x256x256", "1023x1023x1023", "16x4096x4096"}, rows
for r in rows:
    assert r["suite"] == "gemm" and r["dtype"] == "f32" and r["kind"] == "tilec" and r["status"] == "ok", r
    m, n, k = map(int, r["size"].split("x"))
    assert float(r["flops"]) == 2.0 * m * n * k, r
    med = float(r["median_s"])
    assert abs(float(r["gflops"]) - 2.0 * m * n * k / med / 1e9) < 0.01 * float(r["gflops"]) + 0.01, r
EOF
  ok "gemm CSV parses: sizes, flops = 2MNK, GFLOP/s consistent, tilec rows ok" $?
fi
run bench gemm --quick --peers none --dtype int8 --sizes 33x17x300 --threads 1
ok "bench gemm --dtype int8 exits 0 (exit $rc)" $rc
grep -q "^gemm C = A B, u8 x s8 -> i32, 33x17x300 " "$tmp/out" && ! grep -q "^  .* \(WRONG\|FAILED\): " "$tmp/out"
ok "gemm int8: exact against the reference" $?
run bench gemm --quick --peers none --dtype bf16 --sizes 1,5x7x9
ok "bench gemm --dtype bf16 exits 0 (exit $rc)" $rc
[ "$(grep -c '^gemm C = A B, bf16 x bf16 -> f32, ' "$tmp/out")" = 2 ] && ! grep -q "^  .* \(WRONG\|FAILED\): " "$tmp/out"
ok "gemm bf16: two sizes, right" $?

# --- the ISA cap: with TILEC_ISA below the CPU's best level the peers' own ISA switches are set
# to the same level (the user's values kept and marked), stated in an "ISA cap:" header line;
# without TILEC_ISA, or with it at the CPU's level, no such line ---
run info
best=$(sed -n 's/^  cpu best  *//p' "$tmp/out")
run bench gemm --quick --peers none --sizes 8
! grep -q "^  ISA cap: " "$tmp/out"
ok "no ISA cap line without TILEC_ISA" $?
if [ -n "$best" ] && [ "$best" != scalar ]; then
  TILEC_ISA=$best OPENBLAS_CORETYPE=mine run bench gemm --quick --peers none --sizes 8
  ! grep -q "^  ISA cap: " "$tmp/out" && grep -q "^tilec bench gemm: .*, ISA $best; " "$tmp/out"
  ok "no ISA cap line with TILEC_ISA at the CPU's level ($best)" $?
  grep -q "^  environment: .*OPENBLAS_CORETYPE=mine (yours)" "$tmp/out"
  ok "the user's own ISA switch is stated in the environment line" $?
  TILEC_ISA=scalar env -u ONEDNN_MAX_CPU_ISA -u LIBXSMM_TARGET ATEN_CPU_CAPABILITY=mine \
    "$TILEC" bench gemm --quick --peers none --sizes 8 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" = 0 ] && grep -q "^  ISA cap: TILEC_ISA=scalar is below this CPU's best level" "$tmp/out" &&
    grep -q "ONEDNN_MAX_CPU_ISA=SSE41 (set here)" "$tmp/out" && grep -q "LIBXSMM_TARGET=wsm (set here)" "$tmp/out" &&
    grep -q "ATEN_CPU_CAPABILITY=mine (yours)" "$tmp/out"
  ok "TILEC_ISA=scalar caps the peers at SSE4.1, keeping the user's own switch" $?
  if [ "$best" != avx2 ]; then
    TILEC_ISA=avx2 env -u ONEDNN_MAX_CPU_ISA -u OPENBLAS_CORETYPE "$TILEC" bench gemm --quick --peers none --sizes 8 \
      >"$tmp/out" 2>"$tmp/err"
    grep -q "^  ISA cap: TILEC_ISA=avx2 " "$tmp/out" && grep -q "ONEDNN_MAX_CPU_ISA=AVX2 (set here)" "$tmp/out" &&
      grep -q "OPENBLAS_CORETYPE=Haswell (set here)" "$tmp/out"
    ok "TILEC_ISA=avx2 caps oneDNN at AVX2 and OpenBLAS at Haswell" $?
    TILEC_ISA=avx2 DNNL_MAX_CPU_ISA=mine env -u ONEDNN_MAX_CPU_ISA "$TILEC" bench gemm --quick --peers none --sizes 8 \
      >"$tmp/out" 2>"$tmp/err"
    grep -q "^  ISA cap: .*DNNL_MAX_CPU_ISA=mine (yours)" "$tmp/out" && ! grep -q "ONEDNN_MAX_CPU_ISA=" "$tmp/out"
    ok "the user's DNNL_MAX_CPU_ISA (oneDNN's older name) is kept under the cap" $?
  fi
fi

# --- gemm ratios by kind: plain rows against plain peers, pre-packed against pre-packed (oneDNN
# has both; without it there is no pre-packed peer and the pre-packed rows show "-") ---
run_peers bench gemm --quick --peers onednn --sizes 64x96x80 --threads 1 --csv "$tmp/kinds.csv"
ok "bench gemm --peers onednn exits 0 (exit $rc)" $rc
if [ "$have_python" = 1 ]; then
  python3 - "$tmp/kinds.csv" <<'EOF'
import csv, sys
rows = {r["impl"]: r for r in csv.DictReader(open(sys.argv[1]))}
t, tp = rows["tilec tl_matmul"], rows["tilec, B pre-packed"]
d, dp = rows.get("onednn matmul"), rows.get("onednn, B pre-packed")
def ratio(best, r): return float(best["median_s"]) / float(r["median_s"])
# the CSV prints ratios with 4 decimals (+-5e-5) and times with 7 significant digits: a ratio of
# 0.04 (the sanitizer build's tilec against oneDNN) is only known to ~1.3e-3 of itself
def near(x, y): return abs(x - y) < 1e-3 * y + 1e-4
if d and dp and d["status"] == dp["status"] == "ok":
    assert float(d["vs_best_peer"]) == 1.0 and float(dp["vs_best_peer"]) == 1.0, (d, dp)   # each the best of its kind
    assert near(float(t["vs_best_peer"]), ratio(d, t)), t
    assert near(float(tp["vs_best_peer"]), ratio(dp, tp)), tp
else:
    assert tp["vs_best_peer"] == "", tp                      # no pre-packed peer to compare with
EOF
  ok "gemm: plain rows against the best plain peer, pre-packed rows against the best pre-packed one" $?
fi

# --- libxsmm: with the module the build makes from Debian's static archives (libxsmm-dev
# installed when CMake ran), a checked row on odd sizes; without one, the header says why ---
run_peers bench gemm --quick --peers libxsmm --sizes 70x50x33,1x300x129 --threads 2
ok "bench gemm --peers libxsmm exits 0 (exit $rc)" $rc
if grep -q "^  libxsmm: [0-9.]* (Debian's static archives in libtilec_xsmm_peer.so), libxsmm_xgemm_omp" "$tmp/out"; then
  [ "$(grep -c '^  libxsmm xgemm_omp  *[0-9.]* [num]s ' "$tmp/out")" = 2 ] && ! grep -q "^  .* \(WRONG\|FAILED\): " "$tmp/out"
  ok "gemm: libxsmm's row on two odd sizes, checked against the reference" $?
else
  [ ! -e "$(dirname "$TILEC")/libtilec_xsmm_peer.so" ] && grep -q "^  libxsmm: not found (no libtilec_xsmm_peer.so" "$tmp/out" &&
    ! grep -q "^  libxsmm xgemm_omp" "$tmp/out"
  ok "gemm: no libxsmm module next to the binary, the header says why, no row" $?
fi

# --- --offset: gemm operands off their 64-byte lines (checked like any run), refused elsewhere ---
usage_error bench gemm --offset 6
usage_error bench gemm --offset 64
usage_error bench copy --offset 16
run bench gemm --quick --peers none --offset 16 --sizes 24x272x37,300x100x64 --threads 2
ok "bench gemm --offset 16 exits 0 (exit $rc)" $rc
grep -q "^offset: A, B and C start 16 bytes past a 64-byte line" "$tmp/out" && [ "$(grep -c '^gemm C = A B, f32, ' "$tmp/out")" = 2 ] &&
  ! grep -q "^  .* \(WRONG\|FAILED\): " "$tmp/out"
ok "gemm --offset 16: header line, two sizes, right" $?

# --- a CSV path that cannot be written is a runtime failure ---
run bench copy --quick --sizes 4K --csv "$tmp/no/such/dir/x.csv"
[ "$rc" = 1 ] && grep -q "cannot write" "$tmp/err"
ok "unwritable --csv exits 1 (exit $rc)" $?

finish tools_bench_cli
