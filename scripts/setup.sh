#!/usr/bin/env bash
# Installs what a fresh machine lacks to build and test MeowCare: SQLite's headers (the storage
# engine), libxml2 (FoundationXML reads Xcode models with it), python3 (the protocol example) with venv and pip (the Python package's tests in a
# fresh virtual environment), systemd-socket-activate and setpriv (activation and peer-uid
# tests), headless chromium (the report page's browser tests). Idempotent; apt-get runs only when something is missing.
set -euo pipefail

missing=()
dpkg -s libsqlite3-dev >/dev/null 2>&1 || missing+=(libsqlite3-dev)
dpkg -s libxml2 >/dev/null 2>&1 || missing+=(libxml2)
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# A python3 without ensurepip cannot make a virtual environment with pip in it (Debian splits it out).
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || missing+=(python3-venv)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v systemd-socket-activate >/dev/null 2>&1 || missing+=(systemd)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  for dir in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
    [ -x "$dir/swift" ] && export PATH="$dir:$PATH" && break
  done
fi
command -v swift >/dev/null 2>&1 || { echo "setup: no Swift toolchain found (need Swift 6.x on PATH); docs/INSTALL.md says how to get one, or how to use the release artefact instead" >&2; exit 1; }
