#!/usr/bin/env bash
# Make the test sandbox (bubblewrap) work on this runner, or say in one line why it cannot.
# On a GitHub-hosted Ubuntu runner (passwordless sudo): install bubblewrap, and where Ubuntu 24.04's
# AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1),
# give bwrap an AppArmor profile that allows them (/etc/apparmor.d/bwrap, `userns,`), falling back to
# the sysctl. Then prove it: `bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev true` must succeed.
# Prints `ok` or `off: REASON` on its last line; with $GITHUB_ENV set, a failure also exports
# PREREVIEW_SANDBOX_OFF=REASON, which prereview turns into a review note (tests and fix checks off).
# PREREVIEW_SANDBOX_USERNS=auto (the profile or sysctl only where RUNNER_ENVIRONMENT=github-hosted) | allow | deny.
# PREREVIEW_SANDBOX_SUDO=0: never use root or sudo (no apt-get, no AppArmor profile, no sysctl);
# =direct: run those commands without sudo. PREREVIEW_USERNS_SYSCTL / PREREVIEW_APPARMOR_PROFILE: paths.
set -uo pipefail
RESTRICT="${PREREVIEW_USERNS_SYSCTL:-/proc/sys/kernel/apparmor_restrict_unprivileged_userns}"
PROFILE="${PREREVIEW_APPARMOR_PROFILE:-/etc/apparmor.d/bwrap}"
log() { echo "prereview-sandbox: $*" >&2; }
sudo_cmd=()
if [ "${PREREVIEW_SANDBOX_SUDO:-1}" = 0 ]; then
  sudo_cmd=(none)  # the runner's owner forbids changing the machine
elif [ "${PREREVIEW_SANDBOX_SUDO:-1}" = direct ]; then
  sudo_cmd=()  # run the privileged commands as this user (tests; users who hold the rights)
elif [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo_cmd=(sudo -n); else sudo_cmd=(none); fi
fi
# Relaxing the restriction (a profile that lets bwrap make user namespaces, or the sysctl) changes the
# host for every user: by default only on GitHub-hosted runners (throwaway VMs); elsewhere when asked.
userns="${PREREVIEW_SANDBOX_USERNS:-auto}"
if [ "$userns" = auto ]; then
  userns=deny
  if [ "${RUNNER_ENVIRONMENT:-}" = github-hosted ]; then userns=allow; fi
fi
as_root() { [ "${sudo_cmd[0]:-}" = none ] && return 1; "${sudo_cmd[@]}" "$@"; }

off() {
  local reason="$1"
  if [ -n "${GITHUB_ENV:-}" ]; then echo "PREREVIEW_SANDBOX_OFF=$reason" >> "$GITHUB_ENV"; fi
  if [ -n "${PREREVIEW_SANDBOX_ENV_FILE:-}" ]; then echo "export PREREVIEW_SANDBOX_OFF='${reason//\'/}'" > "$PREREVIEW_SANDBOX_ENV_FILE"; fi
  echo "off: $reason"
  exit 0
}
# the flags every sandboxed run uses that a container can refuse (a masked /proc): prereview itself then
# checks the full argv before the review relies on it (bot/sandbox/registry.py preflight)
works() { bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev true 2>/dev/null; }

if ! command -v bwrap >/dev/null; then
  if command -v apt-get >/dev/null && as_root true 2>/dev/null; then
    log "installing bubblewrap"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1 \
      || { as_root apt-get update -qq >/dev/null 2>&1 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1; }
  fi
  command -v bwrap >/dev/null || off "bubblewrap is not installed and cannot be installed here (no root/sudo with apt-get); install it on the runner"
fi
works && { echo ok; exit 0; }

if [ "$(cat "$RESTRICT" 2>/dev/null)" = 1 ]; then
  if [ "$userns" != allow ]; then
    off "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1) and this runner is left as it is: the action relaxes it only on GitHub-hosted runners or with sandbox-userns: allow; see docs/github.md, Sandbox"
  fi
  if as_root true 2>/dev/null; then
    bwrap_path="$(command -v bwrap)"
    log "AppArmor restricts unprivileged user namespaces: adding a profile for $bwrap_path"
    printf '%s\n' 'abi <abi/4.0>,' 'include <tunables/global>' '' \
      "profile bwrap $bwrap_path flags=(unconfined) {" '  userns,' '  include if exists <local/bwrap>' '}' \
      | as_root tee "$PROFILE" >/dev/null && as_root apparmor_parser -r "$PROFILE" 2>/dev/null
    works && { echo ok; exit 0; }
    log "the AppArmor profile did not help: lifting the restriction with sysctl"
    as_root sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0 >/dev/null 2>&1
    works && { echo ok; exit 0; }
    off "bubblewrap cannot create user namespaces even after an AppArmor profile and the sysctl (kernel.apparmor_restrict_unprivileged_userns)"
  fi
  off "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1) and there is no sudo to allow bwrap; see docs/github.md, Sandbox"
fi
err="$(bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev true 2>&1 | head -1)"
off "bubblewrap cannot create its namespaces here (${err:-no message}); containers need user namespaces and an unmasked /proc (e.g. --security-opt systempaths=unconfined, and seccomp=unconfined under Docker) or run tests elsewhere"
