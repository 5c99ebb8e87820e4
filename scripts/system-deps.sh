#!/usr/bin/env bash
# Debian packages the test suite uses: bubblewrap (sandbox), redis-server (scale-out queue tests), git.
# Installs them when running as root with apt-get; otherwise says what is missing (those tests then skip
# with a reason).
set -euo pipefail
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v redis-server >/dev/null || need+=(redis-server)
command -v git >/dev/null || need+=(git)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The Debian package starts a redis service where an init system exists; the tests start their own.
  (command -v systemctl >/dev/null && systemctl stop redis-server 2>/dev/null) || true
else
  echo "system-deps: missing ${need[*]}; install them (e.g. sudo apt-get install ${need[*]}) or the tests that need them skip" >&2
fi
