#!/usr/bin/env bash
# `cmake --install` of this build into a fresh prefix, and the installed
# tool run from another directory with the checkout (and the build tree in
# it) hidden: `backendlab compare` and `backendlab pg --max-time=10s`, the
# latter with a what-if shim and the built-in sampler, which it must load
# from the prefix (base/runtime_files.h). Usage: install_test.sh ROOT BUILD.
# Needs root (a mount namespace of its own hides the checkout) and Debian's
# PostgreSQL 15.
set -euo pipefail
root="$1" build="$2"
[ "$(id -u)" -eq 0 ] || { echo "needs root: the checkout is hidden from the installed tool in a mount namespace of its own"; exit 77; }
command -v unshare >/dev/null || { echo "needs unshare (util-linux)"; exit 77; }
unshare -m --propagation private true 2>/dev/null ||
  { echo "needs a mount namespace: unshare -m is refused here ($(unshare -m true 2>&1 | head -1))"; exit 77; }
[ -x /usr/lib/postgresql/15/bin/postgres ] || { echo "needs postgresql: Debian's postgresql-15 (tools/install-deps --test)"; exit 77; }
work="$(mktemp -d /tmp/backendlab-install-test.XXXXXX)"  # not under the checkout, which the run hides
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/backendlab lib/backendlab/libbackendlab_sampler.so lib/backendlab/libbackendlab_quick_exit.so \
  lib/backendlab/libbackendlab_openssl_no_atexit.so share/doc/backendlab/LICENSE share/doc/backendlab/README.md \
  share/bash-completion/completions/backendlab; do
  [ -f "$prefix/$f" ] || { echo "not installed: $f" >&2; cat "$work/install.log" >&2; exit 1; }
done
mkdir "$work/elsewhere"
# In a mount namespace of its own, a tmpfs over the checkout: no path of the
# build tree the binary was built with can be reached from the run.
unshare -m --propagation private bash -c '
  set -euo pipefail
  root="$1" elsewhere="$2" prefix="$3"
  mount -t tmpfs -o size=1m,mode=0755 hidden "$root"
  [ -z "$(ls -A "$root")" ] || { echo "the checkout is not hidden" >&2; exit 1; }
  cd "$elsewhere"
  export TMPDIR=/tmp
  "$prefix/bin/backendlab" --version
  "$prefix/bin/backendlab" compare --layouts=hash --exit-checks=off --shared-buffers=128MB --connections=2 --warmup=0 \
    --max-time=10s --json=compare.json >compare.out 2>compare.err || { cat compare.err >&2; exit 1; }
  grep -q "^hash/off " compare.out || { echo "compare printed no row:" >&2; cat compare.out >&2; exit 1; }
  # Enough connections that the sampled pass holds samples on a loaded or
  # fast machine too (5 gave none, once, beside two busy loops).
  "$prefix/bin/backendlab" pg --what-if=quick-exit --profile=builtin --shared-buffers=128MB --rounds=1 --connections=200 \
    --warmup=1 --max-time=10s >pg.out 2>pg.err || { cat pg.err >&2; exit 1; }
  grep -q "^15/128MB +quick-exit " pg.out || { echo "pg printed no what-if row:" >&2; cat pg.out >&2; exit 1; }
  grep -q "^built-in sampler: " pg.out || { echo "pg printed no sampler line:" >&2; cat pg.out >&2; exit 1; }
  # Bash completion, from the installed tool'"'"'s own --help: commands, then a command'"'"'s flags.
  export PATH="$prefix/bin:$PATH"
  source "$prefix/share/bash-completion/completions/backendlab"
  complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=(); _backendlab; echo "${COMPREPLY[*]}"; }
  [ "$(complete_words backendlab c)" = "compare cycle calibrate catcache coverage-study" ] ||
    { echo "completing backendlab c gave: $(complete_words backendlab c)" >&2; exit 1; }
  [ "$(complete_words backendlab pg --what)" = "--what-if=" ] ||
    { echo "completing backendlab pg --what gave: $(complete_words backendlab pg --what)" >&2; exit 1; }
' _ "$root" "$work/elsewhere" "$prefix"
echo "installed into a fresh prefix; compare and pg ran from it with the checkout hidden"
