#!/usr/bin/env bash
# tools/fetch-postgres offline: bad input is one usage line and exit 2, a missing
# npm one line and exit 2, a registry that refuses the connection one line and
# exit 1 with nothing left behind. Never reaches the network. Exit 0 passed,
# 1 failed, 77 skipped in part (no npm here: said on stdout). Usage:
# fetch_postgres_test.sh ROOT.
set -euo pipefail
root="$1"
script="$root/tools/fetch-postgres"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0

# expect CODE PATTERN COMMAND...: exit CODE, stdout empty, stderr one line matching PATTERN.
expect() {
  local code="$1" pattern="$2" got=0
  shift 2
  "$@" >"$work/out" 2>"$work/err" || got=$?
  if [[ "$got" != "$code" || -s "$work/out" || "$(wc -l <"$work/err")" != 1 ]] ||
     ! grep -Eq "$pattern" "$work/err"; then
    echo "FAIL: $* exited $got (want $code); stdout: $(cat "$work/out"); stderr: $(cat "$work/err")" >&2
    fail=1
  fi
}

usage='^usage: tools/fetch-postgres \[--force\] VERSION'
expect 2 "$usage" "$script"
expect 2 "$usage" "$script" 9
expect 2 "$usage" "$script" 19
expect 2 "$usage" "$script" abc
expect 2 "$usage" "$script" ''
expect 2 "$usage" "$script" 17 18
expect 2 "$usage" "$script" --bogus 17
expect 2 "$usage" "$script" --force
# Bash builtins alone decide this, so an empty PATH stands for "npm not installed".
expect 2 'npm not found; install it with: apt-get install npm' env PATH=/nonexistent "$BASH" "$script" 17

if command -v npm >/dev/null && command -v node >/dev/null; then
  # A copy of the script in a scratch repository, so "nothing left behind" can be
  # checked there; port 9 on the loopback refuses the connection at once, and
  # without retries npm says so at once.
  mkdir -p "$work/repo/tools" "$work/tmp"
  cp "$script" "$work/repo/tools/"
  expect 1 '^fetch-postgres: npm failed \(ECONNREFUSED\): ' \
    env npm_config_registry=http://127.0.0.1:9/ npm_config_fetch_retries=0 TMPDIR="$work/tmp" timeout 120 "$work/repo/tools/fetch-postgres" 17
  [[ "$(ls -A "$work/repo")" == tools ]] || { echo "FAIL: left in the repository: $(ls -A "$work/repo")" >&2; fail=1; }
  [[ -z "$(ls -A "$work/tmp")" ]] || { echo "FAIL: left in TMPDIR: $(ls -A "$work/tmp")" >&2; fail=1; }
fi
[ "$fail" -eq 0 ] || exit 1
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  # The offline cases passed; the registry-failure case needs npm. Exit 77
  # is CTest's skip (SKIP_RETURN_CODE): a skip, said, not a pass.
  echo "needs npm: the registry-failure case is not run (apt-get install npm)"
  exit 77
fi
