#!/usr/bin/env bash
# The built package on the Node.js lines users run beside the one the tests
# run on (docs/cli.md#the-package), 22 and 24 unless others are named:
# `scripts/node-lines.sh [MAJOR...]`, after `npm run build`.
#
# For each line, Node.js comes from npm's `node-linux-<arch>` package, which
# ships its headers in include/node, so `better-sqlite3` compiles against that
# Node's ABI (npm_config_nodedir; without it, node-gyp takes the headers of
# the Node that runs npm, and opening the store fails). The packed project is
# installed into a new project with that Node, then `runtime validate` and
# `runtime exec` run the circle team on the scripted model. The lines run side
# by side; each costs about 100 s of CPU, better-sqlite3's compile.
set -euo pipefail
cd "$(dirname "$0")/.."

lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(22 24)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tarball="$work/$(npm pack --silent --pack-destination "$work")"
package="node-$(node -p 'process.platform + "-" + process.arch')"
question="What are the area and circumference of a circle with radius 5 meters?"

on_line() {
  local dir="$work/node-$1"
  mkdir -p "$dir/app"
  (cd "$dir" && npm pack --silent "$package@$1" >/dev/null && tar xzf "$package"-*.tgz)
  local node_dir="$dir/package"
  export PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" npm_config_build_from_source=true
  cd "$dir/app"
  echo '{"name":"app","version":"1.0.0","private":true,"allowScripts":{"better-sqlite3":true}}' >package.json
  npm install --prefer-offline --no-audit --no-fund "$tarball"
  local team=node_modules/yaml-agent-runtime/teams/circle-react.yaml
  npx --offline runtime validate "$team"
  local answer
  answer=$(npx --offline runtime exec "$team" "$question" </dev/null)
  case "$answer" in
    *"78.54 m²"*"31.42 m"*) echo "Node.js $(node --version): installed, validate and exec ok" ;;
    *) echo "Node.js $(node --version): unexpected answer: $answer" >&2; return 1 ;;
  esac
}

pids=()
for line in "${lines[@]}"; do
  on_line "$line" >"$work/node-$line.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!lines[@]}"; do
  if wait "${pids[$i]}"; then
    tail -n 1 "$work/node-${lines[$i]}.log"
  else
    echo "scripts/node-lines.sh: Node.js ${lines[$i]} failed:" >&2
    cat "$work/node-${lines[$i]}.log" >&2
    failed=1
  fi
done
exit $failed
