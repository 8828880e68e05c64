#!/usr/bin/env bash
# test_tune.sh — `tilec tune`: help, usage errors (exit 2, one line, nothing on stdout), a short
# search that stores a row, --list / --clear, the DB path from --db and TILEC_TUNE_DB, a corrupt
# or unwritable DB (exit 1 with a message, never a crash), and `tune attention` (prefill :causal
# and decode shapes, its usage errors). Run by CTest as: bash test_tune.sh /path/to/tilec. Last
# line: "N passed, M failed".
# Everything lives in a temporary dir: TILEC_CACHE_DIR holds a copy of the user's probe result
# when one exists (so no 30 s probe is needed), never the user's cache itself.
set -u

. "$(dirname "$0")/cli_util.sh" "$@"
unset TILEC_TUNE TILEC_TUNE_DB
real_cache=${TILEC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tilec}
export TILEC_CACHE_DIR="$tmp/cache"
mkdir -p "$TILEC_CACHE_DIR"
cp "$real_cache"/machine-*.json "$TILEC_CACHE_DIR"/ 2>/dev/null || true
db="$tmp/t/tune.db"

# --- help and usage errors ---
run --help
grep -q "^  tune " "$tmp/out"; ok "tilec --help lists tune" $?
run tune --help
[ $rc -eq 0 ] && grep -q "usage: tilec tune" "$tmp/out"; ok "tune --help" $?
for args in "" "matmul" "nosuch 8x8x8" "matmul 8x8" "matmul 0x8x8" "matmul 8x8x8 --dtype f64" "matmul 8x8x8 --budget 0" \
            "matmul 8x8x8 --budget x" "--suite nosuch" "--suite gemm --dtype bf16" "--list --clear" "--all" "matmul 8x8x8 --frob" \
            "--list 8x8x8" "matmul 8x8x8 --threads 0" "matmul 8x8x8 --db="; do
  run tune $args
  [ $rc -eq 2 ] && one_line_error; ok "usage error: tune $args (rc $rc)" $?
done
# (a size the kernel refuses, 999999999999x2x2, gave exit 1 until 2026-11-26; 8x8x8x was tuned as 8x8x8)
for args in "attention 1x2x64" "attention 1x2x64x32:foo" "attention 1x2x64x32 --dtype int8" "matmul 8x8x8:causal" \
            "matmul 999999999999x2x2" "matmul 8x8x8x"; do
  run tune $args
  [ $rc -eq 2 ] && one_line_error; ok "usage error: tune $args (rc $rc)" $?
done

# one row of a against a streamed b with contiguous rows: tl_matmul splits K between the threads,
# which no candidate does: the shape is not tuned, says why, and the next one is
run tune matmul 1x4096x16384 64x64x128 --dtype int8 --budget 1 --threads 2 --db "$tmp/ks.db"
[ $rc -eq 0 ] && grep -q "^matmul int8 1x4096x16384: not tuned: tl_matmul splits K between the 2 threads" "$tmp/out" &&
  grep -q "^matmul int8 64x64x128 " "$tmp/out" && grep -q "^stored in" "$tmp/out"; ok "tune skips a K-split shape, saying so, and tunes the next (rc $rc)" $?
run tune matmul 1x4096x16384 --dtype int8 --threads 2 --db "$tmp/ks2.db"
[ $rc -eq 0 ] && grep -q "^nothing stored" "$tmp/out" && ! grep -q "^stored in" "$tmp/out"; ok "tune of a K-split shape alone: nothing stored (rc $rc)" $?
# ... said before its tensors are made: b of 512 MiB (until 2026-11-26 allocated and filled first)
if [ $have_python = 1 ]; then
  rss=$(python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' \
    "$TILEC" tune matmul 1x4096x131072 --dtype int8 --threads 2 --db "$tmp/ks3.db")
  [ "${rss%% *}" = 0 ] && [ "${rss##* }" -lt 200 ]; ok "tune of a K-split shape with 512 MiB of b: exit 0, peak RSS under 200 MB ($rss: rc, MB)" $?
fi

# --- a short search stores one row per shape ---
run tune matmul 64x48x40 40x32x24 --budget 1 --threads 1 --db "$db"
ok "tune matmul two shapes exits 0 (rc $rc)" $rc
[ "$(grep -c '^matmul f32' "$tmp/out")" -eq 2 ]; ok "one result line per shape" $?
grep -q "stored in $db" "$tmp/out"; ok "says where it stored" $?
[ -f "$db" ]; ok "the DB file exists" $?
run tune matmul 64x64x64 --dtype bf16 --budget 1 --threads 1 --db "$db"
ok "tune bf16 exits 0" $rc
run tune matmul 64x64x128 --dtype int8 --budget 1 --threads 1 --db "$db"
ok "tune int8 exits 0" $rc
run tune attention 1x2x64x32:causal 1x2x1x256x32 --budget 3 --threads 1 --db "$db"
ok "tune attention prefill (causal) and decode exits 0 (rc $rc)" $rc
grep -q '^attention bf16 1x2x64x32:causal .*BQ=[0-9]* BK=[0-9]*' "$tmp/out" &&
  grep -q '^attention bf16 1x2x1x256x32 .*BK=[0-9]*' "$tmp/out"; ok "attention result lines (BQ/BK; decode BK)" $?
run tune --list --threads 1 --db "$db"
ok "--list exits 0" $rc
[ "$(grep -c '^matmul ' "$tmp/out")" -eq 4 ]; ok "--list shows 4 matmul rows" $?
grep -q "bf16.f32 b1 hq2 hkv2 sq64 sk64 d32 causal1 mask-" "$tmp/out" &&
  grep -q "bf16.f32 b1 hq2 hkv2 sq1 sk256 d32 causal0 mask-" "$tmp/out"; ok "--list shows the attention keys" $?
grep -q "f32.f32.f32 m64 n48 k40 z1" "$tmp/out" && grep -q "bf16.bf16.f32 m64 n64 k64 z1" "$tmp/out" &&
  grep -q "u8.i8.i32 m64 n64 k128 z1" "$tmp/out"; ok "--list keys name dtypes and sizes" $?
TILEC_TUNE_DB="$db" run tune --list --all
[ "$(grep -c '^matmul ' "$tmp/out")" -eq 4 ]; ok "TILEC_TUNE_DB names the DB" $?
run tune --clear --db "$db"
[ $rc -eq 0 ] && grep -q "deleted 6 tuned configs" "$tmp/out"; ok "--clear deletes this machine's rows" $?
run tune --list --db "$db"
grep -q "no tuned configs" "$tmp/out"; ok "--list after --clear" $?
run tune --list --db "$tmp/none/x.db"
[ $rc -eq 0 ] && grep -q "no tuning DB" "$tmp/out"; ok "--list without a DB" $?

# --- bad DBs: a message and exit 1, never a crash ---
head -c 8192 /dev/urandom >"$tmp/garbage.db"
run tune --list --db "$tmp/garbage.db"
[ $rc -eq 1 ] && one_line_error; ok "--list on a garbage DB: exit 1, one line (rc $rc)" $?
run tune matmul 16x16x16 --budget 0.2 --threads 1 --db "$tmp/garbage.db"
[ $rc -eq 1 ] && grep -q "tuning DB" "$tmp/err"; ok "tune into a garbage DB: exit 1 (rc $rc)" $?
touch "$tmp/afile"
run tune matmul 16x16x16 --budget 0.2 --threads 1 --db "$tmp/afile/sub/tune.db"
[ $rc -eq 1 ] && grep -q "cannot" "$tmp/err"; ok "DB under a regular file: exit 1 (rc $rc)" $?

finish tools_tune
