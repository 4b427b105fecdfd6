#!/usr/bin/env bash
# Type-checks the Apple-only presenters (Sources/CutiE/Views/CutiE+Presenters.swift) in Swift 6
# mode against the stand-ins in Tests/AppleStandIns, so a typo or an isolation error fails CI
# although no step here builds for Apple platforms.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/purse-apple.XXXXXX)
trap 'rm -rf "$work"' EXIT
source=Sources/CutiE/Views/CutiE+Presenters.swift
# The file's body without its platform guard and Apple imports.
sed -e '/^#if /d' -e '/^#endif/d' -e '/^import SwiftUI$/d' -e '/^import UIKit$/d' "$source" > "$work/presenters.swift"
swiftc -swift-version 6 -typecheck Tests/AppleStandIns/*.swift "$work/presenters.swift"
echo "PASS $source type-checks against the UIKit and SwiftUI stand-ins (Swift 6)"
