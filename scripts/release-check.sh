#!/usr/bin/env bash
# The release a user installs, checked as a user gets it: `python -m build` makes the sdist
# and the wheel (build/dist/), `twine check --strict` passes both, their version is
# dynaorm.__version__ and the CHANGELOG names it, the wheel installed alone (with the
# `testing` extra) in a fresh venv, run from outside the checkout, runs `dynaorm demo`. The
# LangGraph adapter (libs/langgraph, the distribution dynaorm-langgraph) is built beside it,
# at the same version, which the `langgraph` extra pins.
# RELEASE_CHECK_EXTRAS=1 (before a release: `RELEASE_CHECK_EXTRAS=1 make release-check`)
# then installs the wheel with every extra it publishes there and imports each extra's
# modules (an extra missing from EXTRA_MODULES below fails the check: a new one is added
# there). That is ~1 GB (pyspark, pyarrow, pyiceberg, langgraph, ...) and minutes of pip,
# so `make test` (CI) leaves it out.
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
"$PY" -m build --outdir "$OUT" libs/langgraph >/dev/null
ls "$OUT"/dynaorm-"$version".tar.gz "$OUT"/dynaorm-"$version"-py3-none-any.whl >/dev/null
ls "$OUT"/dynaorm_langgraph-"$version".tar.gz "$OUT"/dynaorm_langgraph-"$version"-py3-none-any.whl >/dev/null
grep -q "\"dynaorm-langgraph==$version\"" pyproject.toml || { echo "the langgraph extra does not pin dynaorm-langgraph==$version"; exit 1; }
grep -q "\"dynaorm==$version\"" libs/langgraph/pyproject.toml || { echo "dynaorm-langgraph does not pin dynaorm==$version"; exit 1; }
"$PY" -m twine check --strict "$OUT"/*
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "$OUT/dynaorm-$version-py3-none-any.whl[testing]"
cd /tmp  # (not the checkout: the installed wheel, nothing else, is imported)
test "$("$OLDPWD/$VENV/bin/dynaorm" --version)" = "dynaorm $version"
"$OLDPWD/$VENV/bin/dynaorm" demo >/dev/null
cd "$OLDPWD"
if [ "${RELEASE_CHECK_EXTRAS:-0}" != 1 ]; then
  echo "release check: dynaorm and dynaorm-langgraph $version (sdist, wheel) built, twine-checked, demo ran from the wheel" \
    "(RELEASE_CHECK_EXTRAS=1 also imports every extra's modules)"
  exit 0
fi
# Every extra: its dependencies' top-level module and the dynaorm modules that need it.
declare -A EXTRA_MODULES=(
  [testing]="moto flask pytest dynaorm.testing dynaorm.testing.emulation.emulator"
  [async]="aiobotocore dynaorm.client.botocore"
  [otel]="opentelemetry.trace dynaorm.protocol.tracing"
  [pynamodb]="pynamodb.models dynaorm.pynamodb"
  [encryption]="cryptography dynaorm.schema.rules.encrypted"
  [spark]="pyspark dynaorm.spark"
  [export]="pyarrow.parquet dynaorm.jobs dynaorm.jobs.exports"
  [mcp]="mcp.server dynaorm.mcp dynaorm.mcp.server"
  [lake]="pyiceberg.catalog.sql dynaorm.lake"
  [powertools]="aws_lambda_powertools.utilities.idempotency dynaorm.powertools"
  [langgraph]="langgraph.checkpoint.base dynaorm_langgraph dynaorm.langgraph"
)
extras=$("$PY" -c "import sys, zipfile
meta = zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode()
print(','.join(sorted(l.split(': ', 1)[1] for l in meta.splitlines() if l.startswith('Provides-Extra: '))))" \
  "$OUT/dynaorm-$version-py3-none-any.whl" "dynaorm-$version.dist-info/METADATA")
modules=""
for extra in ${extras//,/ }; do
  [ -n "${EXTRA_MODULES[$extra]:-}" ] || { echo "release-check.sh: no modules listed for extra '$extra'"; exit 1; }
  modules+=" ${EXTRA_MODULES[$extra]}"
done
"$VENV/bin/python" -m pip install --quiet --find-links "$OUT" "$OUT/dynaorm-$version-py3-none-any.whl[$extras]" 2>&1 \
  | { grep -v "^WARNING: Location 'file:" || true; }
cd /tmp
"$OLDPWD/$VENV/bin/python" -c "import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)" $modules
echo "release check: dynaorm and dynaorm-langgraph $version (sdist, wheel) built, twine-checked, demo ran from the wheel," \
  "every extra's modules imported ($extras)"
