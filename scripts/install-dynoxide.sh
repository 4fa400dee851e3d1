#!/usr/bin/env bash
# Install dynoxide (a DynamoDB-compatible engine in one native binary, from the npm
# package `@dynoxide/linux-x64`) into the git-ignored cache dir .cache/dynoxide.
#
# Idempotent: does nothing if the pinned version is already installed. Only talks to the
# npm registry, with --ignore-scripts. The binary starts in ~0.1 s: `dynoxide --port N`.
#
# Usage: scripts/install-dynoxide.sh [--force]
set -euo pipefail

DYNOXIDE_NPM_VERSION="1.2.1"
NPM_PACKAGE="@dynoxide/linux-x64"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache_dir="${DYNOXIDE_CACHE_DIR:-$repo_root/.cache/dynoxide}"
pkg_dir="$cache_dir/node_modules/$NPM_PACKAGE"

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) echo "warning: dynoxide is installed only for linux-x64; skipping" >&2; exit 0 ;;
esac

installed_version() {
    local pkg_json="$pkg_dir/package.json"
    [[ -f "$pkg_json" ]] || return 0
    node -e 'process.stdout.write(String(require(process.argv[1]).version || ""))' \
        "$pkg_json" 2>/dev/null || true
}

find_binary() {
    find "$pkg_dir" -type f -name dynoxide 2>/dev/null | head -n 1
}

if [[ "${1:-}" != "--force" ]] && [[ "$(installed_version)" == "$DYNOXIDE_NPM_VERSION" ]] \
        && [[ -n "$(find_binary)" ]]; then
    echo "$NPM_PACKAGE@$DYNOXIDE_NPM_VERSION already installed in $cache_dir"
    exit 0
fi

command -v npm >/dev/null 2>&1 || { echo "error: npm not found on PATH" >&2; exit 1; }
mkdir -p "$cache_dir"
echo "Installing $NPM_PACKAGE@$DYNOXIDE_NPM_VERSION into $cache_dir ..."
npm install \
    --prefix "$cache_dir" \
    --no-audit --no-fund --no-update-notifier \
    --ignore-scripts --save-exact --loglevel=error \
    "$NPM_PACKAGE@$DYNOXIDE_NPM_VERSION"

binary="$(find_binary)"
if [[ -z "$binary" ]]; then
    echo "error: no dynoxide binary under $pkg_dir after install" >&2
    exit 1
fi
chmod +x "$binary"
echo "Installed: $binary"
