#!/usr/bin/env bash
# Installs the MeowCare release artefact this script came in (scripts/package.sh puts it at the
# artefact's top as install.sh):
#
#   ./install.sh [--prefix DIR] [--python PYTHON]
#
#   DIR/bin/                    store-service, sync-service, meowctl, meowcare-local
#   DIR/share/meowcare/python/  the Python package's wheel
#   DIR/share/doc/meowcare/     README.md, VERSION, docs/, examples/
#
# DIR defaults to /usr/local. --python PYTHON also installs the wheel into that Python (a
# virtual environment's bin/python, say) with pip, offline. Nothing is copied unless every file
# matches the artefact's SHA256SUMS and the executables find the C libraries they need.
# The test libraries find the executables on PATH, or under DIR when MEOWCARE_PREFIX=DIR.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
usage="usage: ./install.sh [--prefix DIR] [--python PYTHON]"
prefix=/usr/local
python=
while (($#)); do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { echo "$usage" >&2; exit 64; }; prefix="$2"; shift 2 ;;
    --python) [ $# -ge 2 ] || { echo "$usage" >&2; exit 64; }; python="$2"; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1'" >&2; echo "$usage" >&2; exit 64 ;;
  esac
done
if [ ! -f "$here/SHA256SUMS" ] || [ ! -d "$here/bin" ]; then
  echo "install.sh: run the install.sh of an unpacked release artefact (bash scripts/package.sh makes one)." >&2
  exit 64
fi
version="$(cat "$here/VERSION")"

if ! (cd "$here" && sha256sum --quiet --check SHA256SUMS); then
  echo "install.sh: the artefact's files do not match its SHA256SUMS (damaged or changed); unpack a fresh copy. Nothing was installed." >&2
  exit 1
fi
# The compiled executables' C libraries (bin/ also holds the meowcare-local script).
missing="$(for executable in "$here"/bin/*; do
  [ "$(head -c 4 "$executable" | tr -d '\177')" = ELF ] || continue
  ldd "$executable" | sed -n 's/^\s*\(\S*\) => not found$/\1/p'
done | sort -u)"
if [ -n "$missing" ]; then
  echo "install.sh: the executables need C libraries this machine lacks: $(echo $missing). On Debian or Ubuntu:" \
       "apt-get install libsqlite3-0 libxml2 libstdc++6. Nothing was installed." >&2
  exit 1
fi

install -d "$prefix/bin" "$prefix/share/meowcare/python" "$prefix/share/doc/meowcare"
install -m 755 "$here"/bin/* "$prefix/bin/"
install -m 644 "$here"/python/*.whl "$prefix/share/meowcare/python/"
cp -R "$here/README.md" "$here/VERSION" "$here/docs" "$here/examples" "$prefix/share/doc/meowcare/"
echo "install.sh: MeowCare $version installed in $prefix ($(cd "$here/bin" && echo *))"
if [ -n "$python" ]; then
  "$python" -m pip install --quiet --disable-pip-version-check --no-index --force-reinstall "$prefix"/share/meowcare/python/*.whl
  echo "install.sh: meowcare-testing $version installed into $("$python" -c 'import sys; print(sys.prefix)')"
fi
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "install.sh: $prefix/bin is not on PATH; add it (export PATH=\"$prefix/bin:\$PATH\") or set MEOWCARE_PREFIX=$prefix for the test libraries." ;;
esac
