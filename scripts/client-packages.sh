#!/usr/bin/env bash
# What an app fetches: for each client product, a throwaway app package that depends on this
# repository by path with `traits: []` (no Server trait) is resolved here, and fails the run if
# any package outside the client list enters its graph. Then one app using every client product
# is built, so the products build without the server's packages too.
#
#   scripts/client-packages.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
# The packages a client product may bring (docs/clients.md says the same).
allowed="swift-asn1 swift-certificates swift-crypto swift-http-types swift-log"
products="PurseHTTP PurseKit NexusPay StripeConnect Starknet ChippiPay CutiE MyCHIPs"
documented=$(sed -n '/<!-- client-packages -->/,/<!-- \/client-packages -->/p' docs/clients.md | sed -n 's/^- //p' | sort | tr '\n' ' ')
if [ "$documented" != "$allowed " ]; then echo "FAIL docs/clients.md lists '$documented', the script '$allowed'"; exit 1; fi
work=$(mktemp -d /tmp/purse-clients.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0

# manifest NAME PRODUCT...: an app package depending on the named products.
manifest() {
  local name=$1; shift
  local deps="" imports=""
  for product in "$@"; do
    deps+=".product(name: \"$product\", package: \"purse\"), "
    imports+="import $product"$'\n'
  done
  mkdir -p "$work/$name/Sources/App"
  cat > "$work/$name/Package.swift" <<SWIFT
// swift-tools-version: 6.1
import PackageDescription
let package = Package(
    name: "$name",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(name: "purse", path: "$repo", traits: [])],
    targets: [.target(name: "App", dependencies: [$deps])]
)
SWIFT
  printf '%s' "$imports" > "$work/$name/Sources/App/App.swift"
}

for product in $products; do
  manifest "app-$product" "$product"
  (cd "$work/app-$product" && swift package resolve > "$work/$product.log" 2>&1) || { echo "FAIL $product: resolution failed"; tail -5 "$work/$product.log"; failed=1; continue; }
  fetched=$(ls "$work/app-$product/.build/checkouts" | sort | tr '\n' ' ')
  extra=""
  for package in $fetched; do
    case " $allowed " in *" $package "*) ;; *) extra+="$package " ;; esac
  done
  if [ -n "$extra" ]; then echo "FAIL $product brings server packages: $extra"; failed=1; else echo "PASS $product fetches: $fetched"; fi
done

if [ "${1:-}" != "--no-build" ] && [ "$failed" = 0 ]; then
  manifest "app-all" $products
  if (cd "$work/app-all" && swift build > "$work/build.log" 2>&1); then
    echo "PASS an app using every client product builds without the server's packages"
  else
    echo "FAIL the client products do not build without the Server trait:"; grep -E "error:" "$work/build.log" | sort -u | head -20; failed=1
  fi
fi
exit "$failed"
