#!/usr/bin/env bash
# Tests the release artefact (scripts/package.sh) as a user without a Swift toolchain meets it:
#   1. docs/INSTALL.md's install block, run as written: the archive matches its .sha256,
#      install.sh --prefix installs bin/, the wheel and the docs, and --python installs the wheel
#      into a fresh virtual environment offline (--no-index); a changed file makes it refuse;
#   2. ldd shows every executable resolves its libraries and none is Swift's (libswiftCore,
#      Foundation's, libdispatch, libBlocksRuntime, anything under the toolchain);
#   3. in a mount namespace where a tmpfs hides the toolchain's directory (so neither PATH nor the
#      executables' RUNPATH nor the loader's cache can reach it; clearing the environment alone
#      would not prove that), with the checkout's .build hidden too:
#      - every executable's --version and the Python package's __version__ and metadata name VERSION;
#      - a cloud and a device started by hand answer a request that crosses both (sync.now);
#      - the first Python test (docs/TESTING.md) passes in that environment, its services found
#        on PATH (the run's header says so), and the Python package finds them by MEOWCARE_PREFIX.
# Exits non-zero at the first failure, naming it.
#
#   bash scripts/package-test.sh [ARTEFACT]    (default: dist/meowcare-VERSION-linux-ARCH.tar.gz)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="$(python3 "$root/scripts/version-check.py")"
name="meowcare-$version-linux-$(uname -m)"
artefact="$(realpath "${1:-$root/dist/$name.tar.gz}")"
say() { echo "package-test: $*" >&2; }
fail() { echo "package-test: FAILED: $*" >&2; exit 1; }
[ -f "$artefact" ] || fail "no $artefact; build it first: bash scripts/package.sh"
started=$SECONDS

# The first ```LANG block under HEADING of DOC, written to OUT (after an optional first line):
# the docs' own commands are what this script runs.
extract_block() {
  python3 - "$@" <<'EXTRACT'
import os, re, sys
doc, heading, language, out = sys.argv[1:5]
first = sys.argv[5] + "\n" if len(sys.argv) > 5 else ""
level = heading.split(" ")[0]
text = open(doc, encoding="utf-8").read()
section = re.search("^" + re.escape(heading) + r"\n(.*?)(?=^#{1,%d} |\Z)" % len(level), text, re.S | re.M)
block = section and re.search("^```" + language + r"\n(.*?)^```", section.group(1), re.S | re.M)
if not block:
    sys.exit(f"package-test: {doc} has no ```{language} block under '{heading}'")
os.makedirs(os.path.dirname(out), exist_ok=True)
open(out, "w", encoding="utf-8").write(first + block.group(1))
EXTRACT
}
work="$(mktemp -d /tmp/mcpkg.XXXXXX)"
trap 'rm -rf "$work"' EXIT

say "1. docs/INSTALL.md's install block, as written, on a copy of the artefact in $work (HOME=$work/home)"
cp "$artefact" "$artefact.sha256" "$work/"
extract_block "$root/docs/INSTALL.md" "## Install" sh "$work/install-block.sh" "set -euo pipefail"
mkdir "$work/home"
(cd "$work" && HOME="$work/home" bash install-block.sh) >"$work/install.out" 2>&1 || { cat "$work/install.out" >&2; fail "INSTALL.md's install block"; }
prefix="$work/home/.local"
venv="$work/.venv"
unpacked="$work/$name"
grep -q "MeowCare $version installed in $prefix" "$work/install.out" || fail "install.sh did not report the install: $(cat "$work/install.out")"
grep -qx "store-service $version" "$work/install.out" || fail "the block's store-service --version did not print 'store-service $version'"
for file in install.sh SHA256SUMS README.md VERSION docs/TESTING.md docs/INSTALL.md examples "python/meowcare_testing-$version-py3-none-any.whl"; do
  [ -e "$unpacked/$file" ] || fail "the artefact has no $file"
done
for file in bin/store-service bin/sync-service bin/meowctl "share/meowcare/python/meowcare_testing-$version-py3-none-any.whl" \
            share/doc/meowcare/docs/INSTALL.md share/doc/meowcare/README.md; do
  [ -e "$prefix/$file" ] || fail "install.sh left no $prefix/$file"
done
[ "$("$venv/bin/python" -c 'import meowcare_testing, os; print(os.path.dirname(meowcare_testing.__file__))')" \
  = "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/meowcare_testing" ] \
  || fail "meowcare_testing is not imported from the venv's own install of the wheel"
echo corrupted >>"$unpacked/docs/INSTALL.md"
! "$unpacked/install.sh" --prefix "$work/refused" >"$work/refused.out" 2>&1 || fail "install.sh installed a changed artefact"
grep -q "do not match its SHA256SUMS" "$work/refused.out" && [ ! -e "$work/refused" ] || fail "install.sh's refusal: $(cat "$work/refused.out")"

say "2. ldd: no Swift library, nothing missing"
for executable in "$prefix"/bin/*; do
  [ "$(head -c 4 "$executable" | tr -d '\177')" = ELF ] || continue   # meowcare-local is a script
  libraries="$(ldd "$executable")"
  if grep -qiE 'swift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime' <<<"$libraries"; then
    fail "$(basename "$executable") links a Swift library: $(grep -iE 'swift|Foundation|dispatch|BlocksRuntime' <<<"$libraries")"
  fi
  if grep -q 'not found' <<<"$libraries"; then fail "$(basename "$executable") lacks a library: $(grep 'not found' <<<"$libraries")"; fi
done

# The toolchain is wherever `swift` resolves (…/usr/bin/swift); /opt/swift is hidden as well.
swift="$(command -v swift || echo /opt/swift/usr/bin/swift)"
toolchain=/opt/swift
[ -e "$swift" ] && toolchain="$(dirname "$(dirname "$(dirname "$(realpath "$swift")")")")"
case "$toolchain" in /|/usr|/usr/local) fail "swift ($swift) is installed into $toolchain itself, which cannot be hidden alone; run this where the toolchain has a directory of its own" ;; esac
extract_block "$root/docs/TESTING.md" "### The first test" python "$work/first-test/test_first.py"

# Runs in the namespace: $1 the toolchain, $2 the prefix, $3 the venv, $4 the version, $5 the work dir.
cat >"$work/hidden.sh" <<'HIDDEN'
set -euo pipefail
toolchain="$1" prefix="$2" venv="$3" version="$4" work="$5"
fail() { echo "package-test: FAILED (toolchain hidden): $*" >&2; exit 1; }
export PATH="$prefix/bin:/usr/local/bin:/usr/bin:/bin"
unset MEOWCARE_BIN_DIR MEOWCARE_PREFIX MEOWCARE_EXTERNAL LD_LIBRARY_PATH
[ -z "$(ls -A "$toolchain")" ] || fail "$toolchain is still visible"
! command -v swift >/dev/null 2>&1 || fail "swift is still on PATH: $(command -v swift)"

for executable in store-service sync-service meowctl; do
  said="$("$prefix/bin/$executable" --version)" || fail "$executable --version exited $?"
  [ "$said" = "$executable $version" ] || fail "$executable --version says '$said', VERSION is $version"
done
said="$("$venv/bin/python" -c 'import meowcare_testing, importlib.metadata as m; print(meowcare_testing.__version__, m.version("meowcare-testing"))')"
[ "$said" = "$version $version" ] || fail "the Python package says '$said' (__version__, metadata), VERSION is $version"

# A cloud and a device, started by hand; sync.now makes the device call the cloud as its user.
run="$work/run"; mkdir -m 700 "$run"
(umask 077 && printf '{"users":[{"user":"olivia","credential":"%s"}]}\n' olivia-credential-1234 >"$run/users.json")
MEOW_EXIT_WITH_PID=$$ sync-service --socket "$run/cloud.sock" --in-memory --users "$run/users.json" 2>"$run/cloud.log" &
cloud=$!
MEOW_EXIT_WITH_PID=$$ store-service --socket "$run/a.sock" --in-memory --sync-socket "$run/cloud.sock" \
  --sync-credential olivia-credential-1234 --device-name A 2>"$run/a.log" &
device=$!
for socket in cloud a; do
  # Ready is the service's own answer to health; each try waits for that answer, not for time.
  for try in $(seq 1 300); do
    meowctl call --raw --timeout 5 --socket "$run/$socket.sock" health 2>/dev/null | grep -q '"ready":true' && break
    [ "$try" -lt 300 ] || fail "$socket never answered health ready: $(tail -3 "$run/$socket.log")"
    sleep 0.1
  done
done
reply="$(meowctl call --socket "$run/a.sock" sync.now)" || fail "sync.now failed: $reply"
grep -q '"send"' <<<"$reply" && grep -q '"fetch"' <<<"$reply" || fail "sync.now's reply has no send and fetch: $reply"
kill "$device" "$cloud"; wait || true

# The installed meowcare-local runs the executables beside it: a deployment up, a device's
# answer, down (nothing left running).
(cd "$work" && meowcare-local up --dir "$work/local" --in-memory >"$work/local-up.out" 2>&1) \
  || { cat "$work/local-up.out" >&2; fail "the installed meowcare-local up"; }
reply="$(meowctl call --socket "$work/local/sockets/device-a.sock" sync.now)" || fail "the installed deployment's device A: $reply"
grep -q '"send"' <<<"$reply" || fail "the installed deployment's device A answered: $reply"
meowcare-local down --dir "$work/local" >"$work/local-down.out" 2>&1 || { cat "$work/local-down.out" >&2; fail "the installed meowcare-local down"; }

# The first Python test, from outside any checkout; its services come from PATH.
cd "$work/first-test"
"$venv/bin/python" -m pytest -p no:cacheprovider test_first.py >"$work/pytest.out" 2>&1 || { cat "$work/pytest.out" >&2; fail "the first Python test failed"; }
grep -q "store-service and sync-service from $prefix/bin (found by PATH)" "$work/pytest.out" \
  || { cat "$work/pytest.out" >&2; fail "pytest's header does not say the services came from $prefix/bin by PATH"; }
found="$(PATH=/usr/bin:/bin MEOWCARE_PREFIX="$prefix" "$venv/bin/python" -c 'from meowcare_testing.binaries import locate_binaries; print(locate_binaries().summary)')"
[ "$found" = "store-service and sync-service from $prefix/bin (found by MEOWCARE_PREFIX)" ] || fail "with MEOWCARE_PREFIX the package found: $found"
HIDDEN

say "3. toolchain ($toolchain) hidden: --version, a cloud and a device, the first Python test"
# As root a mount namespace is enough; otherwise a user namespace maps the caller to root in it.
namespace=(unshare --mount)
[ "$(id -u)" -eq 0 ] || namespace=(unshare --map-root-user --mount)
hide=(/opt/swift "$toolchain" "$root/.build")
"${namespace[@]}" bash -c 'for dir in "${@:6}"; do [ -d "$dir" ] && mount -t tmpfs meowcare-hidden "$dir"; done; exec bash "$0" "$1" "$2" "$3" "$4" "$5"' \
  "$work/hidden.sh" "$toolchain" "$prefix" "$venv" "$version" "$work" "${hide[@]}" \
  || fail "the run with the toolchain hidden (above)"
say "passed in $((SECONDS - started)) s"
