#!/usr/bin/env bash
# The `lens-trace` wheel, built and used as a Python team would use it: run by .ci/run.
#
# 1. maturin (pinned: pyproject.toml's build requirement, from PyPI into a scratch venv) builds
#    the wheel from the workspace (`--release --locked`, the workspace's target/: a release build
#    of lens-cli already there is reused); its tag and the metadata PyPI shows are checked
#    (packaging/check_metadata.py wheel).
# 2. A fresh venv with NeMo Lens and its FastAPI/aiohttp extras as pinned by
#    tests/interop/requirements.txt, and the wheel.
# 3. The Python team's scenario (scenario/run.py) in that venv, with nothing but the venv's bin
#    and the system's on PATH and no Rust variables: `lens watch --save` receiving two FastAPI
#    services' spans through NeMo Lens's own exporter, then `lens check` on the file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source packaging/python.sh
MATURIN_VERSION="1.16.0"
grep -q "\"maturin==$MATURIN_VERSION\"" packaging/pypi/pyproject.toml

work="$(mktemp -d "${TMPDIR:-/tmp}/lens-wheel.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PYTHON" -m venv "$work/maturin"
"$work/maturin/bin/pip" install --quiet --disable-pip-version-check "maturin==$MATURIN_VERSION"
(cd packaging/pypi && "$work/maturin/bin/maturin" build --release --locked --out "$work/dist")
wheel="$(ls "$work"/dist/lens_trace-*.whl)"
cargo metadata --no-deps --format-version 1 --locked >"$work/cargo-metadata.json"
"$PYTHON" packaging/check_metadata.py wheel "$wheel" "$work/cargo-metadata.json"

"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    -r tests/interop/requirements.txt "$wheel"

env -i HOME="$work" LANG=C.UTF-8 PATH="$work/venv/bin:/usr/bin:/bin" \
    "$work/venv/bin/python" packaging/pypi/scenario/run.py "$work/scenario"
echo "pypi: $(basename "$wheel") built, checked, installed beside NeMo Lens; the scenario passed"
