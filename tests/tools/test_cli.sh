#!/usr/bin/env bash
# test_cli.sh — the `tilec` command line: help, version, `tilec info` (text and JSON), the ISA cap
# from --isa and TILEC_ISA, and the exit codes and one-line errors for bad usage.
# Run by CTest as: bash test_cli.sh /path/to/tilec. Last line: "N passed, M failed".
set -u

. "$(dirname "$0")/cli_util.sh" "$@"

# json_get KEY: prints the top-level JSON value of KEY from $tmp/out (python3 only).
json_get() {
  python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1" <"$tmp/out"
}

# --- help and version ---
run --help
ok "tilec --help exits 0" $rc
grep -q "info" "$tmp/out"; ok "tilec --help lists info" $?
run -h
ok "tilec -h exits 0" $rc
run --version
ok "tilec --version exits 0" $rc
grep -q "^tilec [0-9]" "$tmp/out"; ok "tilec --version prints the version" $?
run help info
ok "tilec help info exits 0" $rc
grep -q "usage: tilec info" "$tmp/out"; ok "tilec help info prints the usage" $?
run info --help
ok "tilec info --help exits 0" $rc
grep -q "usage: tilec info" "$tmp/out"; ok "tilec info --help prints the usage" $?
run info --json --help
ok "tilec info --json --help exits 0" $rc

# --- bad usage: exit 2, one line on stderr ---
run
[ $rc -eq 2 ]; ok "tilec without a command exits 2 (got $rc)" $?
run frobnicate
[ $rc -eq 2 ]; ok "unknown subcommand exits 2 (got $rc)" $?
one_line_error; ok "unknown subcommand: one-line error" $?
grep -q "frobnicate" "$tmp/err"; ok "unknown subcommand named in the error" $?
run help frobnicate
[ $rc -eq 2 ]; ok "tilec help frobnicate exits 2 (got $rc)" $?
run --bogus-option
[ $rc -eq 2 ]; ok "unknown top-level option exits 2 (got $rc)" $?
run info --isa bogus
[ $rc -eq 2 ]; ok "info --isa bogus exits 2 (got $rc)" $?
one_line_error; ok "info --isa bogus: one-line error" $?
grep -q "^tilec info: .*bogus" "$tmp/err"; ok "info --isa bogus: error names the value" $?
grep -q "avx512bf16" "$tmp/err"; ok "info --isa bogus: error lists valid names" $?
run info --isa
[ $rc -eq 2 ]; ok "info --isa without a value exits 2 (got $rc)" $?
run info --threads 0
[ $rc -eq 2 ]; ok "info --threads 0 exits 2 (got $rc)" $?
run info --threads abc
[ $rc -eq 2 ]; ok "info --threads abc exits 2 (got $rc)" $?
one_line_error; ok "info --threads abc: one-line error" $?
run info --frob
[ $rc -eq 2 ]; ok "info --frob exits 2 (got $rc)" $?
one_line_error; ok "info --frob: one-line error" $?
TILEC_ISA=bogus "$TILEC" info >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ]; ok "TILEC_ISA=bogus tilec info exits 2 (got $rc)" $?
one_line_error; ok "TILEC_ISA=bogus: one-line error" $?

# --- tilec info (text) ---
run info
ok "tilec info exits 0" $rc
[ ! -s "$tmp/err" ]; ok "tilec info: nothing on stderr" $?
for word in vendor brand avx2 avx512bf16 amx-tile threads "vmem budget" "cache dir" paths; do
  grep -q -- "$word" "$tmp/out"; ok "tilec info mentions '$word'" $?
done
run info --isa scalar --threads 1
ok "tilec info --isa scalar --threads 1 exits 0" $rc
grep -Eq "^  in use +scalar$" "$tmp/out"; ok "tilec info --isa scalar: in use scalar" $?
grep -Eq "^  threads +1$" "$tmp/out"; ok "tilec info --threads 1: threads 1" $?

# --- tilec info --json ---
run info --json
ok "tilec info --json exits 0" $rc
head -c1 "$tmp/out" | grep -q "{"; ok "tilec info --json starts with {" $?
if [ $have_python = 1 ]; then
  python3 -c 'import json,sys; json.load(sys.stdin)' <"$tmp/out"; ok "tilec info --json parses" $?
  python3 -c '
import json, sys
d = json.load(sys.stdin)
order = ["scalar", "avx2", "avx2vnni", "avx512", "avx512vnni", "avx512bf16", "amx"]
assert d["isa"] in order and d["isa_cap"] == "amx" and d["isa_cap_source"] == "none"
assert d["isa"] == d["cpu"]["isa_max"], (d["isa"], d["cpu"]["isa_max"])
assert [p["name"] for p in d["isa_paths"]] == order
vnni = d["cpu"]["features"]["avx-vnni"]  # avx2vnni: a side branch, unused without AVX-VNNI
assert [p["used"] for p in d["isa_paths"]] == [i <= order.index(d["isa"]) and (order[i] != "avx2vnni" or vnni) for i in range(len(order))]
assert len(d["cpu"]["features"]) == 15 and all(isinstance(v, bool) for v in d["cpu"]["features"].values())
assert d["threads"] >= 1 and d["cpu"]["cpus_allowed"] >= 1 and d["vmem_bytes"] > 0 and d["l1_bytes"] > 0
assert d["amx_state"] in ("absent", "not-requested", "granted", "refused")
' <"$tmp/out"
  ok "tilec info --json: fields consistent" $?
fi

TILEC_ISA=scalar "$TILEC" info --json >"$tmp/out" 2>"$tmp/err"
rc=$?
ok "TILEC_ISA=scalar tilec info --json exits 0" $rc
grep -q '"isa": "scalar"' "$tmp/out"; ok "TILEC_ISA=scalar: isa scalar" $?
grep -q '"isa_cap_source": "TILEC_ISA"' "$tmp/out"; ok "TILEC_ISA=scalar: cap source TILEC_ISA" $?
if [ $have_python = 1 ]; then
  [ "$(json_get isa)" = scalar ]; ok "TILEC_ISA=scalar: JSON isa is scalar" $?
fi

# --isa wins over TILEC_ISA
TILEC_ISA=scalar "$TILEC" info --json --isa avx2 >"$tmp/out" 2>"$tmp/err"
rc=$?
ok "TILEC_ISA=scalar tilec info --isa avx2 exits 0" $rc
grep -q '"isa_cap": "avx2"' "$tmp/out"; ok "--isa overrides TILEC_ISA" $?

# JSON strings are escaped (a cache dir with a quote, a backslash and a tab)
TILEC_CACHE_DIR=$'/tmp/a"b\\c\td' "$TILEC" info --json >"$tmp/out" 2>"$tmp/err"
rc=$?
ok "tilec info --json with an odd cache dir exits 0" $rc
if [ $have_python = 1 ]; then
  [ "$(json_get cache_dir)" = $'/tmp/a"b\\c\td' ]; ok "JSON escapes the cache dir" $?
fi

# --- file paths: empty or with a control character refused before any work (a newline in a
# --plot name went into gnuplot's script: the rest of the name ran as gnuplot commands) ---
nl_path="$tmp/a.png
system \"touch $tmp/INJECTED\""
for cmd in roofline "bench copy --quick --sizes 4K"; do
  run $cmd --plot "$nl_path"
  [ $rc -eq 2 ] && one_line_error && [ ! -e "$tmp/INJECTED" ]; ok "$cmd --plot with a newline: exit 2, one line, nothing run (got $rc)" $?
  run $cmd --csv ""
  [ $rc -eq 2 ] && one_line_error; ok "$cmd --csv '': exit 2 at once (got $rc)" $?
done
run bench copy --quick --sizes 4K,,8K
[ $rc -eq 2 ] && one_line_error; ok "bench --sizes with an empty entry: exit 2 (got $rc)" $?

# --- gnuplot unable to open the output: its PNG does not land on tilec's stdout ---
if command -v gnuplot >/dev/null 2>&1; then
  run roofline --quick --kernel copy --csv "$tmp/r.csv" --plot "$tmp/nodir/x.png"
  [ $rc -eq 1 ] && ! grep -q PNG "$tmp/out" && grep -q "no plot" "$tmp/err"; ok "roofline --plot into a missing dir: exit 1, table only on stdout (got $rc)" $?
fi

finish tools_cli
