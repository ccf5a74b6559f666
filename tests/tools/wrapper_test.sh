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
exit "$fail"
