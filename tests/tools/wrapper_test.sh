#!/usr/bin/env bash
# tools/backendlab runs the command from the caller's directory (defect 9: it
# changed to the repository root, so relative --json paths and a relative
# TMPDIR landed in the repository). Usage: wrapper_test.sh ROOT PRESET BINARY.
# Runs the wrapper on the preset whose BINARY is under test, already built, so
# the wrapper's build step has nothing to do; exits 77 (skipped) when BINARY is
# not that preset's (a build directory made without a preset).
set -euo pipefail
root="$1" preset="$2" binary="$3"
if [ ! "$root/build/$preset/tools/backendlab" -ef "$binary" ]; then
  echo "needs a preset's build: $binary is not the $preset preset's binary"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir tmp
# A name no repository file has, so that finding it there means the wrapper put it there.
name="wrapper-test-$$.json"
TMPDIR=tmp BACKENDLAB_PRESET="$preset" "$root/tools/backendlab" compare --layouts=hash --exit-checks=off \
  --shared-buffers=128MB --connections=1 --rounds=1 --warmup=0 --work-lookups=1 --json="$name" >stdout 2>stderr || {
  echo "the wrapper failed:" >&2; cat stderr >&2; exit 1; }
fail=0
[ -s "$work/$name" ] || { echo "no $name in the caller's directory" >&2; fail=1; }
if [ -e "$root/$name" ]; then
  echo "$name landed in the repository root" >&2
  rm -f "$root/$name"
  fail=1
fi
[ -z "$(ls -A tmp)" ] || { echo "the relative TMPDIR was left non-empty: $(ls -A tmp)" >&2; fail=1; }
grep -q "^hash/off " stdout || { echo "no report on stdout:" >&2; cat stdout >&2; fail=1; }

# What the wrapper installs and fetches for a command, dry-run: perf where the
# command records with perf, npm and a fetch for a major not here yet.
expect_needs() {
  local want_install="$1" want_fetch="$2" got
  shift 2
  got="$(BACKENDLAB_WRAPPER_DRY_RUN=1 "$root/tools/backendlab" "$@")"
  if [ "$got" != "$(printf 'install-deps %s\nfetch %s' "$want_install" "$want_fetch")" ]; then
    echo "tools/backendlab $*: wants '$got', expected install-deps '$want_install', fetch '$want_fetch'" >&2
    fail=1
  fi
}
expect_needs "--perf" "" calibrate
expect_needs "--perf" "" pg --profile
expect_needs "" "" pg --profile=builtin
expect_needs "--perf" "" pg --profile=builtin,perf
expect_needs "--perf" "" profile --perf
expect_needs "" "" profile
expect_needs "" "" cycle --pg-versions=16
# A major that is neither Debian's nor fetched (none from 10 to 14 is, on a
# machine with only postgresql-15) is fetched; 15 is Debian's; 9 is left for
# the tool to refuse; --explain-phases needs no server.
missing=""
for m in 10 11 12 13 14; do
  if [ ! -x "/usr/lib/postgresql/$m/bin/postgres" ] && [ ! -x "$root/.cache/postgres/$m/native/bin/postgres" ]; then
    missing="$m"
    break
  fi
done
if [ -n "$missing" ] && [ -x /usr/lib/postgresql/15/bin/postgres ]; then
  expect_needs "--npm" "$missing" pg "--pg-versions=15,$missing,9"
  expect_needs "" "" pg --explain-phases "--pg-versions=$missing"
fi
# `tools/backendlab install`: a prefix that is relative, or under something
# no directory can be made in, is one line and exit 2 before anything is
# built; an install goes in whole, and one that cannot finish leaves nothing.
install_usage() {
  local rc=0 err
  err="$(BACKENDLAB_PRESET="$preset" "$root/tools/backendlab" install "$@" 2>&1 >/dev/null)" || rc=$?
  if [ "$rc" -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ "$err" != "backendlab install: "* ]]; then
    echo "tools/backendlab install $*: rc $rc, expected 2 and one line; said: $err" >&2
    fail=1
  fi
}
install_usage --prefix=relative/dir
install_usage --prefix=
install_usage --prefix=/proc/backendlab
install_usage --frobnicate
BACKENDLAB_PRESET="$preset" "$root/tools/backendlab" install --prefix="$work/prefix" >install.out 2>install.err || {
  echo "tools/backendlab install failed:" >&2; cat install.err >&2; fail=1; }
for f in bin/backendlab lib/backendlab/libbackendlab_sampler.so share/doc/backendlab/LICENSE; do
  [ -f "$work/prefix/$f" ] || { echo "install: no $f in the prefix" >&2; fail=1; }
done
"$work/prefix/bin/backendlab" --version | grep -q "^backendlab " || { echo "the installed tool has no --version" >&2; fail=1; }
# lib/ a file: lib/backendlab cannot be made, after bin/ and share/ may have been.
mkdir "$work/blocked"
touch "$work/blocked/lib"
rc=0
BACKENDLAB_PRESET="$preset" "$root/tools/backendlab" install --prefix="$work/blocked" >/dev/null 2>blocked.err || rc=$?
[ "$rc" -eq 1 ] || { echo "install into a prefix whose lib is a file: rc $rc, expected 1" >&2; fail=1; }
left="$(cd "$work/blocked" && find . -mindepth 1 | sort | tr '\n' ' ')"
[ "$left" = "./lib " ] || { echo "a failed install left: $left" >&2; fail=1; }
exit "$fail"
