#!/usr/bin/env bash
# zbarimg (Debian zbar-tools), an independent decoder, reads back every PNG our QR encoder
# writes for the committed vectors (versions 1-40, levels L-H, the mask chosen by penalty) and for
# each MyCHIPs link form (ticket, invite, pay, signkey):
#   scripts/oracles/qr_zbar.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d /tmp/purse-qr.XXXXXX)
trap 'rm -rf "$dir"' EXIT
QR_PNG_DIR="$dir" swift test --skip-build --filter "writesPNGsForAnIndependentDecoder|writesLinkQRCodes" > /dev/null
count=0
for png in "$dir"/*.png; do
  decoded=$(zbarimg --raw -q -Sbinary "$png" 2>/dev/null | od -An -v -tx1 | tr -d ' \n')
  expected=$(cat "${png%.png}.hex")
  if [ "$decoded" != "$expected" ]; then echo "zbarimg read $(basename "$png") as '$decoded', expected '$expected'"; exit 1; fi
  count=$((count + 1))
done
[ "$count" -ge 50 ] || { echo "only $count PNGs"; exit 1; }
[ "$(ls "$dir"/chips-*.png | wc -l)" = 5 ] || { echo "the MyCHIPs link codes are missing"; exit 1; }
echo "zbarimg decoded all $count QR codes"
