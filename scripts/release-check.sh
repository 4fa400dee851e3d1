#!/usr/bin/env bash
# The release a user installs, checked as a user gets it: `python -m build` makes the sdist
# and the wheel (build/dist/), `twine check --strict` passes both, their version is
# dynaorm.__version__ and the CHANGELOG names it, and the wheel installed alone (with the
# `testing` extra) in a fresh venv, run from outside the checkout, runs `dynaorm demo`.
# PYTHON: the interpreter with `build` and `twine` (default: .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=build/dist
VENV=build/release-venv
rm -rf "$OUT" "$VENV"
version=$("$PY" -c "import re,pathlib;print(re.search(r'__version__ = \"(.+)\"', pathlib.Path('dynaorm/_version.py').read_text()).group(1))")
grep -q "$version" CHANGELOG.md || { echo "CHANGELOG.md does not name version $version"; exit 1; }
"$PY" -m build --outdir "$OUT" . >/dev/null
ls "$OUT"/dynaorm-"$version".tar.gz "$OUT"/dynaorm-"$version"-py3-none-any.whl >/dev/null
"$PY" -m twine check --strict "$OUT"/*
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "$OUT/dynaorm-$version-py3-none-any.whl[testing]"
cd /tmp  # (not the checkout: the installed wheel, nothing else, is imported)
test "$("$OLDPWD/$VENV/bin/dynaorm" --version)" = "dynaorm $version"
"$OLDPWD/$VENV/bin/dynaorm" demo >/dev/null
echo "release check: dynaorm $version (sdist, wheel) built, twine-checked, demo ran from the wheel"
