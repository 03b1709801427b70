#!/usr/bin/env bash
# The test command of the README and of CI (.ci/run): install what the tests
# need and is missing, then `npm ci`, `npm test` and scripts/node-lines.sh.
#
# The tests use real components, never stand-ins (docs/testing.md): a headless
# Chromium for the server's page, tmux for the live terminal view, a PostgreSQL
# cluster each store test starts on loopback, util-linux's setsid for the
# process-tree tests, bubblewrap for sandboxed tools. On Debian they come from
# apt-get (as root, or through `sudo -n`); elsewhere this stops naming what is
# missing. `scripts/test.sh --install-only` installs and stops there.
set -euo pipefail
cd "$(dirname "$0")/.."

install_only=false
case "${1:-}" in
  --install-only) install_only=true ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--install-only]" >&2; exit 2 ;;
esac

# PostgreSQL's server binaries are off PATH in Debian's package (test/support/postgres.ts finds them there).
have_postgres() {
  command -v initdb >/dev/null || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || return 1
  # As root the tests run the cluster as the `postgres` user the package creates.
  [ "$(id -u)" != 0 ] || id -u postgres >/dev/null 2>&1
}

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/tmux ] || missing+=(tmux)
have_postgres || missing+=(postgresql)
command -v setsid >/dev/null || missing+=(util-linux)
command -v bwrap >/dev/null || missing+=(bubblewrap)

if [ ${#missing[@]} -gt 0 ]; then
  apt_line="apt-get update && apt-get install -y ${missing[*]}"
  if [ "$(id -u)" = 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
  else
    echo "scripts/test.sh: the tests need ${missing[*]}; as root, run: $apt_line" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null; then
    echo "scripts/test.sh: the tests need ${missing[*]} and this machine has no apt-get: install them with its package manager" >&2
    exit 1
  fi
  echo "scripts/test.sh: installing ${missing[*]}" >&2
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

$install_only && exit 0

# The slow-reader test holds 500 SSE connections (1,000 descriptors) in one process.
ulimit -n 65536 2>/dev/null || ulimit -n 4096 2>/dev/null || true

node --version
# better-sqlite3 compiles from source here (python3, make, g++); nothing else is fetched beyond npm packages.
npm ci --no-audit --no-fund
npm test
# The packed project on Node.js 22 and 24 too, from npm's node packages (docs/cli.md#the-package).
scripts/node-lines.sh
