#!/usr/bin/env bash
# Runs README.md's "Write your first test" Swift block, as it stands there, from outside this
# package: a new Swift package in a temporary directory that depends on this repository by path
# (product MeowCareTesting) and holds that block as its one test file; then `swift test` there.
# Exits non-zero when the block does not compile or its test fails.
#
# The temporary package builds this repository's library modules for itself. Its build
# directory is kept in .build/first-test-swift (used by this script alone, one run at a time),
# so later runs rebuild only what changed; the services it starts are this repository's own
# build (`swift build` here first, which scripts/test.sh has done).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
source scripts/setup.sh
swift build --product store-service >/dev/null
swift build --product sync-service >/dev/null

work="$(mktemp -d /tmp/first-test-swift.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/Tests/FirstTests"
python3 - "$repo/README.md" "$work/Tests/FirstTests/FirstTest.swift" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
section = text.split("\n## Write your first test\n", 1)
if len(section) != 2:
    sys.exit("README.md has no '## Write your first test' section")
block = re.search(r"^```swift\n(.*?)^```", section[1].split("\n## ", 1)[0], re.S | re.M)
if not block:
    sys.exit("README.md's 'Write your first test' section has no ```swift block")
open(sys.argv[2], "w", encoding="utf-8").write(block.group(1))
PY
cat >"$work/Package.swift" <<SWIFT
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "FirstTest",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "$repo")],
    targets: [
        .testTarget(name: "FirstTests", dependencies: [.product(name: "MeowCareTesting", package: "$(basename "$repo")")],
                    swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
)
SWIFT
echo "first-test-swift: README's block as $work/Tests/FirstTests/FirstTest.swift, in a package that depends on $repo"
swift test --package-path "$work" --scratch-path "$repo/.build/first-test-swift"
