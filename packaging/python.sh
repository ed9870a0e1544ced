# Sourced by packaging/*.sh: sets PYTHON to a Python >= 3.13 (what nemo-lens 0.1.0 needs), looked
# for as `cargo xtask interop` looks: $LENS_INTEROP_PYTHON, then python3.14 / python3.13 /
# python3 on PATH, then pyenv's versions, newest first.
python_ok() {
    [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null
}
PYTHON=""
for candidate in "${LENS_INTEROP_PYTHON:-}" python3.14 python3.13 python3 \
    $(ls -1d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3 2>/dev/null | sort -rV); do
    if python_ok "$candidate"; then
        PYTHON="$(command -v "$candidate")"
        break
    fi
done
if [ -z "$PYTHON" ]; then
    echo "error: no Python >= 3.13 (set LENS_INTEROP_PYTHON, or e.g. pyenv install 3.13)" >&2
    exit 1
fi
