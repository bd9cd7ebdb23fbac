#!/usr/bin/env bash
# Chromium from the system package manager, for the tests that open the HTML report in a real headless browser
# (driven by the playwright package of the dev extra, which is given this browser instead of downloading its own).
# Installed when missing and this user may run apt-get (root or password-less sudo); otherwise those tests skip
# and say this command.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then APT=(apt-get); elif sudo -n true 2>/dev/null; then APT=(sudo -n apt-get); else
  echo "scripts/browser.sh: chromium is not installed and apt-get needs root: the browser tests will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
"${APT[@]}" install -y -q chromium >/dev/null 2>&1 || { "${APT[@]}" update -q >/dev/null && "${APT[@]}" install -y -q chromium >/dev/null; }
