#!/usr/bin/env bash
# The measurement scripts of tools/ run end to end, tiny: soak judges
# memory and descriptors over its samples; the overhead and comparison
# scripts print each round, the median of their per-round ratios and their
# interval (a goal judged on it where one is set); aa-study reads the JSON
# of the compares it ran as it reads files given to it; all leave nothing
# behind. Usage: scripts_test.sh ROOT PRESET BINARY SCRIPT, one script a
# test (CTest runs them side by side). Exits 77 (skipped, saying why) when
# BINARY is not PRESET's (a build directory made without a preset), or, for
# the scripts that start a real server, where Debian's PostgreSQL 15 is not
# installed.
set -euo pipefail
root="$1" preset="$2" binary="$3" script="$4"
if [ ! "$root/build/$preset/tools/backendlab" -ef "$binary" ]; then
  echo "needs a preset's build: $binary is not the $preset preset's binary"
  exit 77
fi
export BACKENDLAB_PRESET="$preset"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
# As root the servers run as postgres, which must reach their directories
# inside TMPDIR: traversable, not listable.
chmod 0711 "$work" "$work/tmp"
export TMPDIR="$work/tmp"
fail=0
# expect NAME PATTERNS COMMAND...: exit 0 and, for each of the
# newline-separated PATTERNS, a line of stdout matching it.
expect() {
  local name="$1" patterns="$2" pattern
  shift 2
  if ! "$@" >"$work/out" 2>"$work/err"; then
    echo "FAIL: $name exited non-zero: $(cat "$work/err")" >&2
    fail=1
  else
    while IFS= read -r pattern; do
      grep -Eq "$pattern" "$work/out" && continue
      echo "FAIL: $name printed no line matching '$pattern':" >&2
      cat "$work/out" >&2
      fail=1
    done <<<"$patterns"
  fi
  if [ -n "$(ls -A "$work/tmp")" ]; then
    echo "FAIL: $name left in TMPDIR: $(ls -A "$work/tmp")" >&2
    rm -rf "${work:?}/tmp/"*
    fail=1
  fi
}
# The median and range of two rounds' ratios, then their interval.
ratios='median of 2 per-round ratios [0-9.]+ \(range [0-9.]+-[0-9.]+
geometric mean [0-9.]+ \[[0-9.]+, [0-9.]+\] \(95 % interval\)'
goal='goal >= 0.95 (met|missed|not resolved)'
# aa-study's summary, of its runs and of their files alike.
study='^2 runs of compare --aa=on \(seeds 1, 2\)
^A/A ratios faster or slower at 95 %: [0-9] of 4
^runs with every A/A ratio same or ~: [0-2] of 2
^runs passing the family check .*: [0-2] of 2
^A/A t statistics: root mean square [0-9.]+ .* over 4
^widest interval of a run, every ratio .*: \+-[0-9.]+-[0-9.]+ \(median [0-9.]+\) %
^recomputed from the rounds, the tool.s own verdicts agree in 2 of 2 runs'
case "$script" in
  soak|sampler-overhead|aa-study) ;;
  *)
    if [ ! -x /usr/lib/postgresql/15/bin/postgres ]; then
      echo "needs postgresql: the real-server scripts are not run (tools/install-deps installs postgresql-15)"
      exit 77
    fi
    ;;
esac
case "$script" in
  soak)
    INTERVAL=1 expect soak '^postmaster: RSS [0-9]+ -> [0-9]+ kB .*: (flat|NOT FLAT)$' \
      "$root/tools/soak" --duration=6s --clients=1 --shared-buffers=128MB --layout=hash --work-lookups=10 ;;
  sampler-overhead)
    ROUNDS=2 expect sampler-overhead "$ratios" "$root/tools/sampler-overhead" --connections=40 --work-lookups=10 ;;
  pg-counters-overhead)
    ROUNDS=2 expect pg-counters-overhead "$ratios
$goal" "$root/tools/pg-counters-overhead" --connections=20 --warmup=2 ;;
  pg-vs-pgbench)
    ROUNDS=2 expect pg-vs-pgbench "$ratios" "$root/tools/pg-vs-pgbench" 50 ;;
  pg-builtin-overhead)
    ROUNDS=2 expect pg-builtin-overhead "^recorded / without the library: $ratios
^recorded / without the library: $goal
^loaded, gate closed / without the library: geometric mean" \
      "$root/tools/pg-builtin-overhead" --connections=20 --warmup=2 ;;
  aa-study)
    # aa-study: two compares of a baseline and its A/A copy, 4 rounds each
    # (the t statistics need 4), their JSON kept; then the same study from the
    # files alone must print the same figures.
    mkdir "$work/aa"
    expect aa-study "$study" "$root/tools/aa-study" --runs=2 --out="$work/aa" --layouts=hash --exit-checks=off \
      --shared-buffers=128MB --baseline=hash/off --connections=4 --rounds=4 --precision=0 --warmup=0 --work-lookups=10
    cp "$work/out" "$work/aa/ran"
    expect "aa-study of files" "$study" "$root/tools/aa-study" "$work/aa/aa-1.json" "$work/aa/aa-2.json"
    # Its header's paths aside, the report is the one the runs gave.
    if ! diff <(grep -v '^  seed' "$work/aa/ran") <(grep -v '^  seed' "$work/out") >&2; then
      echo "FAIL: aa-study of the files printed other figures than of its runs" >&2
      fail=1
    fi
    for bad in --runs=0 --aa=off "--seed=3"; do
      if "$root/tools/aa-study" "$bad" >/dev/null 2>"$work/err"; [ "$?" -ne 2 ] || [ "$(wc -l <"$work/err")" -ne 1 ]; then
        echo "FAIL: aa-study $bad: not one line and exit 2: $(cat "$work/err")" >&2
        fail=1
      fi
    done
    if "$root/tools/aa-study" "$work/aa/ran" >/dev/null 2>"$work/err"; [ "$?" -ne 2 ]; then
      echo "FAIL: aa-study of a file that is not a compare's JSON did not exit 2: $(cat "$work/err")" >&2
      fail=1
    fi
    ;;
  *)
    echo "scripts_test.sh: unknown script '$script'" >&2
    exit 2 ;;
esac
exit "$fail"
