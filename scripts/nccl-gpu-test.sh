#!/usr/bin/env bash
# Runs the prebuilt GPU suites of lens-nccl and lens-dist (and, with --bench, lens-nccl's GPU
# benchmark) on a machine without a Rust toolchain. Build them with `cargo xtask gpu-test
# --build-only`, carry the folder <target-dir>/gpu-test/ (which holds this script) and run
# `./nccl-gpu-test.sh [--bench]` in it.
#
# NCCL: cudarc looks for libnccl.so, while the pip wheel nvidia-nccl-cu13 ships only libnccl.so.2.
# This script puts a libnccl.so symlink to the wheel's library ($LENS_NCCL_LIB_DIR, or
# nvidia/nccl/lib in python3's site-packages) in a temporary folder first on LD_LIBRARY_PATH.
# Without a GPU the binaries say why and exit 0 having run nothing.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench=0
for arg in "$@"; do
    case "$arg" in
        --bench) bench=1 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done

lib_dir="${LENS_NCCL_LIB_DIR:-}"
if [ -z "$lib_dir" ] && command -v python3 >/dev/null 2>&1; then
    lib_dir="$(python3 - <<'PY' || true
import os, site, sys
for p in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
    d = os.path.join(p, "nvidia", "nccl", "lib")
    if os.path.isfile(os.path.join(d, "libnccl.so.2")):
        print(d)
        break
PY
)"
fi

if [ -n "$lib_dir" ] && [ -f "$lib_dir/libnccl.so.2" ]; then
    link_dir="$(mktemp -d)"
    trap 'rm -rf "$link_dir"' EXIT
    ln -s "$lib_dir/libnccl.so.2" "$link_dir/libnccl.so"
    export LD_LIBRARY_PATH="$link_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "nccl-gpu-test: NCCL from $lib_dir (libnccl.so symlink in $link_dir)"
else
    echo "nccl-gpu-test: no nvidia-nccl wheel found; relying on a libnccl.so on the library path"
fi

# Both suites run even when the first fails; the exit status is non-zero if either failed.
status=0
for suite in lens-nccl-gpu-test lens-dist-gpu-test; do
    echo "nccl-gpu-test: running $suite"
    "$dir/$suite" || { echo "nccl-gpu-test: $suite FAILED" >&2; status=1; }
done
if [ "$bench" = 1 ]; then
    "$dir/lens-nccl-gpu-bench" --bench || status=1
fi
exit "$status"
