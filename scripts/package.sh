#!/usr/bin/env bash
# Builds the release artefact, dist/meowcare-VERSION-linux-ARCH.tar.gz, and its checksum beside it
# (.sha256). In it, under meowcare-VERSION-linux-ARCH/:
#   bin/        store-service, sync-service, meowctl: release builds with Swift's
#               runtime and Foundation linked in (--static-swift-stdlib), so they need only C
#               libraries Debian ships (libc, libstdc++, libsqlite3; libxml2 for store-service);
#               and meowcare-local, the local deployment's script, which runs the ones beside it
#   python/     the Python package as a wheel (scripts/build-wheel.py: offline, standard library only)
#   install.sh  ./install.sh --prefix DIR [--python PYTHON] (scripts/install.sh)
#   SHA256SUMS  every other file's checksum, which install.sh verifies
#   README.md, VERSION, docs/, examples/
# The release build has its own build directory, .build/package, so it leaves the debug build
# (and scripts/bench.sh's release build) as they are. scripts/package-test.sh tests the result.
#
#   bash scripts/package.sh          prints the artefact's path
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source scripts/setup.sh
version="$(python3 scripts/version-check.py)"
name="meowcare-$version-linux-$(uname -m)"
scratch=.build/package
# meow-bench stays out: MeowCare's own benchmarks, run from a checkout (scripts/bench.sh).
products=(store-service sync-service meowctl)

started=$SECONDS
for product in "${products[@]}"; do
  # Static Foundation's own mktemp use draws a linker warning on every link; it is not ours.
  swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product "$product" 2>&1 \
    | sed "/the use of \`mktemp' is dangerous/d"
done
bin="$(swift build -c release --static-swift-stdlib --scratch-path "$scratch" --show-bin-path)"
echo "package: release build took $((SECONDS - started)) s" >&2

stage="dist/$name"
rm -rf "$stage" "dist/$name.tar.gz" "dist/$name.tar.gz.sha256"
mkdir -p "$stage/bin" "$stage/python" "$stage/docs"
for product in "${products[@]}"; do
  install -m 755 "$bin/$product" "$stage/bin/$product"
  # Symbols only a debugger reads; without them the executables are about a third smaller.
  if command -v strip >/dev/null 2>&1; then strip "$stage/bin/$product"; fi
done
install -m 755 deploy/meowcare-local "$stage/bin/meowcare-local"
python3 scripts/build-wheel.py "$stage/python" >/dev/null
install -m 755 scripts/install.sh "$stage/install.sh"
cp README.md VERSION "$stage/"
cp docs/*.md "$stage/docs/"
cp -R examples "$stage/examples"
(cd "$stage" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum >SHA256SUMS)

# The same sources give the same archive: entries sorted, owned by root, dated at the last commit.
epoch="$(git log -1 --format=%ct 2>/dev/null || date +%s)"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C dist -cf - "$name" | gzip -n >"dist/$name.tar.gz"
(cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
rm -rf "$stage"
echo "package: $(du -h "dist/$name.tar.gz" | cut -f1) in $((SECONDS - started)) s" >&2
echo "$root/dist/$name.tar.gz"
