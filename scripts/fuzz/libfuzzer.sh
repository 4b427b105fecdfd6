#!/usr/bin/env bash
# libFuzzer over the parsers of untrusted bytes: PurseFormats (JSON, CBOR, dates, amounts, base64url,
# hex, URI components, checked arithmetic, WebAuthn authenticator data) and the Starknet readers
# (felts, u256, STRK text). Each harness is compiled with its module's sources by swiftc with
# -sanitize=fuzzer,address (not by swift build), seeded from Fuzz/*/corpus/TARGET and run for
# SECONDS. A crash or a failed property fails the run, its input kept in .ci-artifacts/fuzz/.
#   scripts/fuzz/libfuzzer.sh [SECONDS per target] [--update]   (--update merges new inputs into the committed corpora)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
update=${2:-}
out=.build-fuzz
artifacts=.ci-artifacts/fuzz
mkdir -p "$out" "$artifacts"

formats=$(find Sources/PurseFormats -name '*.swift' | sort)
starknet="Sources/Starknet/Felt.swift $(ls Sources/Starknet/Arithmetic/*.swift Sources/Starknet/Cairo/*.swift | tr '\n' ' ') Sources/Starknet/Hashing/Keccak.swift Sources/Starknet/Hashing/Pedersen.swift Sources/Starknet/Curve/StarkCurve.swift"
build() { # NAME MODULE SOURCES...
  local name=$1 module=$2
  shift 2
  swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name "$module" "$@" -o "$out/$name" 2>&1 | { grep -v "ld.gold: warning" || true; }
  [ -x "$out/$name" ] || { echo "fuzz: $name did not build"; exit 1; }
}
build purse-formats PurseFormats $formats Fuzz/FuzzMain.swift Fuzz/PurseFormats/Harness.swift
# shellcheck disable=SC2086
build starknet Starknet $starknet $formats Fuzz/FuzzMain.swift Fuzz/Starknet/Harness.swift

status=0
run() { # BINARY CORPUS-ROOT TARGET
  local binary=$1 root=$2 target=$3
  local work
  work=$(mktemp -d)
  mkdir -p "$root/corpus/$target"
  PURSE_FUZZ_TARGET=$target "$out/$binary" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$target-" "$work" "$root/corpus/$target" > "$artifacts/$target.log" 2>&1 || {
      echo "fuzz: $target FAILED (input in $artifacts/$target-*)"; tail -30 "$artifacts/$target.log"; status=1; }
  local runs
  runs=$(grep -Eo 'stat::number_of_executed_units: [0-9]+|#[0-9]+' "$artifacts/$target.log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  echo "fuzz: $target: $runs inputs in ${seconds}s, corpus $(ls "$root/corpus/$target" | wc -l) committed + $(ls "$work" | wc -l) new"
  if [ "$update" = "--update" ]; then
    PURSE_FUZZ_TARGET=$target "$out/$binary" -merge=1 "$root/corpus/$target" "$work" > /dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
for target in strictjson cbor jsdate decimal base64url hex uri checked authdata; do run purse-formats Fuzz/PurseFormats "$target"; done
for target in felt u256 strk; do run starknet Fuzz/Starknet "$target"; done
exit "$status"
