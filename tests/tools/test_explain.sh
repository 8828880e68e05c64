#!/usr/bin/env bash
# test_explain.sh — `tilec machines` and `tilec explain`: the table and JSON of the machines, a
# kernel explained on a preset (known bytes and bound), on the host (a timed run whose stats equal
# the plan's cost), several shapes, a K-split matmul (explain's "as run" line, and the row
# `tilec roofline` times as tl_matmul runs it), and the exit codes and one-line errors for bad
# usage.
# Run by CTest as: bash test_explain.sh /path/to/tilec. Last line: "N passed, M failed".
# The host is probed once into a temporary cache dir (TILEC_CACHE_DIR), so the test never reads
# or writes the user's cache.
set -u

. "$(dirname "$0")/cli_util.sh" "$@"
export TILEC_CACHE_DIR="$tmp/cache"

# py CODE: runs python3 CODE with the JSON on stdout loaded as `d`; its exit status is the check.
py() {
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $1" "$tmp/out"
}

# --- help ---
run --help
grep -q "explain" "$tmp/out" && grep -q "machines" "$tmp/out"; ok "tilec --help lists explain and machines" $?
run explain --help
[ $rc -eq 0 ] && grep -q "usage: tilec explain" "$tmp/out"; ok "explain --help" $?
run machines --help
[ $rc -eq 0 ] && grep -q "usage: tilec machines" "$tmp/out"; ok "machines --help" $?

# --- machines: presets only (never probes) ---
run machines --no-host
ok "machines --no-host exits 0 (got $rc)" $rc
for m in tpu-v5e tpu-v5p tpu-v6e a100 h100 h200; do
  grep -q "^$m " "$tmp/out"; ok "machines lists $m" $?
done
grep -q "^host " "$tmp/out"; [ $? -ne 0 ]; ok "--no-host: no host line" $?
[ ! -s "$tmp/err" ]; ok "--no-host: nothing on stderr" $?
run machines --no-host --verbose
[ $rc -eq 0 ] && [ "$(grep -c 'source: ' "$tmp/out")" -ge 24 ]; ok "machines --verbose shows sources" $?
grep -q "datasheet" "$tmp/out" && grep -q "estimate" "$tmp/out"; ok "sources name datasheets and estimates" $?
run machines --no-host --json
ok "machines --json exits 0" $rc
if [ $have_python = 1 ]; then
  py 'ms=d["machines"]; assert [m["name"] for m in ms]==["tpu-v5e","tpu-v5p","tpu-v6e","a100","h100","h200"]'
  ok "machines --json parses, six presets in order" $?
  py 'assert all(m["units"] and m["levels"] and all(u["source"] for u in m["units"]) and all(l["source"] for l in m["levels"]) for m in d["machines"])'
  ok "every preset has units, levels and sources" $?
  py 'm=[m for m in d["machines"] if m["name"]=="h100"][0]; u=[u for u in m["units"] if u["dtype"]=="bf16"][0]; assert abs(u["peak"]-989.4e12)<1e9 and "dense" in u["source"]'
  ok "h100 bf16 peak is the dense 989 TFLOP/s" $?
fi

# --- explain on a preset: known bytes and bound ---
run explain scale 512x512 --machine tpu-v5e
ok "explain scale 512x512 --machine tpu-v5e exits 0 (got $rc)" $rc
grep -q "on tpu-v5e" "$tmp/out" && grep -q "VMEM" "$tmp/out" && grep -q "bound .*set by VMEM bandwidth" "$tmp/out"
ok "tpu-v5e: served from VMEM, VMEM sets the bound" $?
grep -q "in0 .*f32\[512x512\]" "$tmp/out" && grep -q "out0 .*write" "$tmp/out" && grep -q "map" "$tmp/out"
ok "operands listed with tensor, map and output mode" $?
grep -q "budgets .*vmem" "$tmp/out"; ok "budgets shown" $?
grep -q "measured" "$tmp/out"; [ $? -ne 0 ]; ok "a preset is not run" $?
run explain scale 512x512 --machine tpu-v5e --json
ok "explain --json on a preset exits 0" $rc
if [ $have_python = 1 ]; then
  py 'r=d["reports"][0]; assert d["machine"]["name"]=="tpu-v5e" and r["bytes_read"]==1048576 and r["bytes_written"]==1048576'
  ok "scale 512x512 moves 1 MiB each way" $?
  py 'r=d["reports"][0]; b=r["bound"]; assert b["limiter"]=="VMEM" and abs(b["seconds"]-2097152/(22*819e9))<1e-12 and r["measured"] is None'
  ok "bound = 2 MiB / (22 x 819 GB/s), limiter VMEM" $?
  py 'r=d["reports"][0]; assert [o["role"] for o in r["operands"]]==["in","out"] and r["operands"][0]["block"][1]==512'
  ok "operands in JSON, blocks resolved" $?
fi
run explain matmul_grid 256x256x256 --machine h100
[ $rc -eq 0 ] && grep -q "set by cuda-core compute" "$tmp/out"; ok "f32 matmul on h100 is bound by the CUDA cores" $?

# --- explain on the host: a timed run, stats == cost (probes once into $TILEC_CACHE_DIR) ---
run explain scale 512x512
ok "explain scale 512x512 on the host exits 0 (got $rc)" $rc
grep -q "on host" "$tmp/out"; ok "host named" $?
grep -q "bytes: stats == cost" "$tmp/out"; ok "host: stats == cost" $?
grep -q "measured .*median .*GFLOP/s.*GB/s.*attainment" "$tmp/out"; ok "host: median, GFLOP/s, GB/s, attainment" $?
grep -q "check .*ok" "$tmp/out"; ok "host: result checked" $?
run explain scale 256x256 300x17 --json
ok "two shapes on the host, JSON (got $rc)" $rc
if [ $have_python = 1 ]; then
  py 'rs=d["reports"]; assert len(rs)==2 and all(r["stats"]["equal_to_cost"] and r["check"]["ok"] for r in rs) and d["machine"]["measured"]'
  ok "two reports, stats == cost and checked" $?
  py 'rs=d["reports"]; assert all(r["stats"]["bytes_read"]==r["bytes_read"] and r["stats"]["bytes_written"]==r["bytes_written"] for r in rs)'
  ok "stats bytes equal cost bytes in JSON" $?
fi
run explain matmul_grid 96x80x64 softmax_rows --threads 1 --no-run
[ $rc -eq 2 ]; ok "a bad second shape exits 2 (got $rc)" $?
one_line_error; ok "every shape is checked before any report: nothing on stdout, one error line" $?
run explain matmul_grid 96x80x64 --threads 1
[ $rc -eq 0 ] && grep -q "bytes: stats == cost" "$tmp/out"; ok "matmul_grid with edge blocks, 1 thread: stats == cost" $?

# --- tl_matmul's K split (two plans): the plan shown unsplit, tl_matmul itself timed and checked
# beside it ("as run"); `tilec roofline` times such a row as tl_matmul runs it and marks it ---
run explain matmul 2x1024x2048 --threads 2
[ $rc -eq 0 ] && grep -q "config .*shown unsplit" "$tmp/out" &&
  grep -q "as run .*tl_matmul: K split between 2 threads.*attainment.*relative error .*: ok" "$tmp/out"
ok "K-split shape: the unsplit plan, and tl_matmul timed and checked as run (got $rc)" $?
if [ $have_python = 1 ]; then
  run explain matmul 2x1024x2048 64x64x64 --threads 2 --json
  py 'rs=d["reports"]; a=rs[0]["as_run"]; assert a["ok"] and a["median_s"]>0 and a["reps"]>0 and "K split" in a["what"] and rs[1]["as_run"] is None'
  ok "JSON: as_run for the K-split shape, null for one that runs its one plan (got $rc)" $?
  run explain matmul 2x1024x2048 --threads 2 --no-run --json
  py 'assert d["reports"][0]["as_run"] is None'; ok "--no-run: as_run null" $?
fi
run roofline --kernel matmul --threads 2 --no-plot --csv "$tmp/rl.csv"
[ $rc -eq 0 ] && grep -q "^matmul  *16x4096x4096 .*%  *\*$" "$tmp/out" && grep -q "^\* matmul 16x4096x4096: timed as tl_matmul: K split" "$tmp/out" &&
  [ "$(grep -c '\*$' "$tmp/out")" = 1 ]
ok "roofline: the K-split row (only it) marked, timed as tl_matmul, noted under the table (got $rc)" $?

# --- machines with the host (cached now: no probe announcement) ---
run machines
ok "machines exits 0 (got $rc)" $rc
grep -q "^host " "$tmp/out"; ok "machines lists the host" $?
grep -q "measuring" "$tmp/err"; [ $? -ne 0 ]; ok "cached host: nothing measured" $?
run machines --json
if [ $have_python = 1 ]; then
  py 'm=d["machines"][0]; assert m["name"]=="host" and m["measured"] and len(d["machines"])==7'
  ok "machines --json: host first, measured" $?
fi

# --- bad usage: exit 2, one line on stderr, nothing on stdout ---
run explain frobnicate 64x64
[ $rc -eq 2 ]; ok "unknown kernel exits 2 (got $rc)" $?
one_line_error; ok "unknown kernel: one-line error" $?
grep -q "scale" "$tmp/err" && grep -q "frobnicate" "$tmp/err"; ok "unknown kernel: names it and lists the kernels" $?
run explain
[ $rc -eq 2 ] && one_line_error; ok "no kernel: exit 2, one line" $?
run explain scale 12xq --machine h100
[ $rc -eq 2 ]; ok "bad shape exits 2 (got $rc)" $?
one_line_error; ok "bad shape: one-line error" $?
grep -q "12xq" "$tmp/err"; ok "bad shape named" $?
# sizes: digits only, none missing (until 2026-11-26 '64x' ran as 64 and '+64' / ' 64' parsed)
for bad in 64x 8x8x8x +64x64 " 64x64" x64 64xx64; do
  run explain scale "$bad" --machine h100
  [ $rc -eq 2 ] && one_line_error; ok "shape '$bad': exit 2, one line (got $rc)" $?
done
run explain scale 2000000000000x2 --machine h100
[ $rc -eq 2 ] && grep -q "larger than 2^40" "$tmp/err"; ok "a size past 2^40 says so (got $rc)" $?
run explain scale 64x64 --machine HOST --no-run
[ $rc -eq 0 ]; ok "--machine HOST is the host, as preset names ignore case (got $rc)" $?
run explain scale 64x64 --machine tpu-v9
[ $rc -eq 2 ]; ok "unknown machine exits 2 (got $rc)" $?
one_line_error; ok "unknown machine: one-line error" $?
grep -q "tpu-v5e" "$tmp/err" && grep -q "tpu-v9" "$tmp/err"; ok "unknown machine: lists the presets" $?
run explain scale 64x64 --bogus
[ $rc -eq 2 ] && one_line_error; ok "unknown option: exit 2, one line" $?
run explain scale 64x64 --threads 0
[ $rc -eq 2 ] && one_line_error; ok "--threads 0: exit 2, one line" $?
run explain scale 64x64 --machine
[ $rc -eq 2 ] && one_line_error; ok "--machine without a value: exit 2, one line" $?
run machines extra
[ $rc -eq 2 ] && one_line_error; ok "machines with an argument: exit 2, one line" $?
run machines --frob
[ $rc -eq 2 ] && one_line_error; ok "machines unknown option: exit 2, one line" $?

# on a preset and with --no-run the operands are allocated, never written (dry): 2 x 400 MB of
# copy's x and y cost address space, not RAM (filled, this was 784 MB and 1.6 s until 2026-11-26)
if [ $have_python = 1 ]; then
  run explain copy 64x64 --no-run --threads 1 # (the 1-thread probe cached first: it is not what is measured)
  for extra in "--machine a100" "--no-run --threads 1"; do
    rss=$(python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$TILEC" explain copy 100000000x1 $extra)
    [ "${rss%% *}" = 0 ] && [ "${rss##* }" -lt 200 ]; ok "explain copy 100000000x1 $extra: exit 0, peak RSS under 200 MB ($rss: rc, MB)" $?
  done
fi

finish tools_explain
