#!/usr/bin/env bash
# `cargo install --locked lens-cli` exactly as a Rust team will run it once the crates are
# published, from the packaged crates of this checkout: run by .ci/run.
#
# 1. `cargo package` of every crate under crates/ (not verified again: .ci/run's packaging step
#    has just built each package); lens-cli's packaged Cargo.toml has what crates.io shows
#    (check_metadata.py crate).
# 2. A directory source standing in for crates.io: the lens crates unpacked from their .crate
#    files (checksum: the .crate's, as crates.io records it) beside every other dependency of the
#    packaged Cargo.lock (`cargo vendor`).
# 3. `cargo install --locked lens-cli --root <temporary>` with crates.io replaced by that source:
#    the lock file inside the package, unchanged. Crates from that source are not the workspace's
#    units (another source, other hashes): the first run builds all of them in release. The
#    source sits at one path, <target>/lens-cargo-install/registry, and the target folder is the
#    workspace's (CARGO_TARGET_DIR, default target/), so that later runs reuse the builds of the
#    dependencies (not of the lens crates: they are cleaned first, see below).
# 4. The installed `lens --version` (the version, the commit of this checkout from the package's
#    .cargo_vcs_info.json) and `lens demo` (exit 0, one complete trace).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source packaging/python.sh

version="$(cargo metadata --no-deps --format-version 1 --locked |
    "$PYTHON" -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "lens-cli"))')"
work="$(mktemp -d "${TMPDIR:-/tmp}/lens-cargo-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT

target="${CARGO_TARGET_DIR:-$PWD/target}"
PUBLISHED=()
for dir in crates/*/; do PUBLISHED+=(-p "$(basename "$dir")"); done
commit="$(git rev-parse HEAD 2>/dev/null || true)"
cargo package --locked --no-verify --quiet "${PUBLISHED[@]}"

# The stand-in for crates.io, rebuilt at the same path each run (its path is part of the hashes
# of what is built from it).
vendor="$target/lens-cargo-install/registry"
scratch="$target/lens-cargo-install/scratch"
rm -rf "$vendor" "$scratch"
mkdir -p "$vendor" "$scratch"
for dir in crates/*/; do
    name="$(basename "$dir")"
    crate="$target/package/$name-$version.crate"
    mkdir -p "$vendor/$name"
    tar -xzf "$crate" -C "$vendor/$name" --strip-components=1
    printf '{"files":{},"package":"%s"}' "$(sha256sum "$crate" | cut -d' ' -f1)" \
        >"$vendor/$name/.cargo-checksum.json"
done
"$PYTHON" packaging/check_metadata.py crate "$vendor/lens-cli/Cargo.toml"
# Every other dependency of the packaged lock file, from a scratch copy resolved with the lens
# crates patched in (the copy's lock file changes; the package's does not).
# (The copy outside the workspace, which would otherwise claim it.)
cp -r "$vendor/lens-cli" "$work/lens-cli"
patches=()
for dir in crates/*/; do
    name="$(basename "$dir")"
    [ "$name" = lens-cli ] && continue
    patches+=(--config "patch.crates-io.$name.path=\"$vendor/$name\"")
done
(cd "$work/lens-cli" && cargo vendor --quiet "${patches[@]}" "$scratch/deps" >/dev/null)
for dep in "$scratch/deps"/*; do
    [ -e "$vendor/$(basename "$dep")" ] || mv "$dep" "$vendor/"
done
rm -rf "$scratch"

# Cargo takes a registry package to be immutable: a lens crate built from this source at another
# commit would be reused as it is. Drop the release builds of the lens crates (by name: those of
# the workspace too; the dependencies stay).
cargo clean --quiet --release --target-dir "$target" "${PUBLISHED[@]}"
root="$work/root"
CARGO_TARGET_DIR="$target" cargo install --locked lens-cli --root "$root" \
    --config 'source.crates-io.replace-with="lens-packaged"' \
    --config "source.lens-packaged.directory=\"$vendor\""

lens="$root/bin/lens"
"$lens" --version | tee "$work/version"
head -n 1 "$work/version" | grep -qx "lens $version"
# The commit `cargo package` recorded (.cargo_vcs_info.json), that of this checkout.
if [ -n "$commit" ]; then
    sed -n 2p "$work/version" | grep -qx "commit $commit"
fi
"$lens" demo --color never | tee "$work/demo"
grep -q '^trace [0-9a-f]\{32\}: 13 spans, complete' "$work/demo"
echo "cargo-install: lens $version installed from the packaged crate; --version and demo work"
