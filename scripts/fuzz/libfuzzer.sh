#!/usr/bin/env bash
# libFuzzer over every parser of untrusted bytes (the PurseFuzz target, Sources/PurseFuzz):
# PurseFormats (JSON, CBOR, dates, amounts, base64url, hex, URI components, checked arithmetic,
# WebAuthn authenticator data, image headers, PDF text), Starknet (felts, u256, STRK text, a node's JSON-RPC answers and the
# transactions a node reads), the hot routes' FlatJSONDecoder against Foundation, MyCHIPs links,
# the App Attest and StoreKit verifiers, and PurseP521 against swift-crypto. SwiftPM builds it in its own scratch directory with
# -sanitize=fuzzer,address; each target then runs for SECONDS from Fuzz/corpus/TARGET. A crash or a
# failed property fails the run, its input kept in .ci-artifacts/fuzz/.
#   scripts/fuzz/libfuzzer.sh [SECONDS per target] [--update]   (--update merges new inputs into the committed corpora)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
update=${2:-}
scratch=.build-fuzz/spm
artifacts=.ci-artifacts/fuzz
mkdir -p "$artifacts"

# SwiftPM links executables with their own `main` (PurseFuzz's calls libFuzzer's driver), so the
# instrumentation is -sanitize=fuzzer's without its main: address sanitizer, libFuzzer's coverage
# counters and comparison traces, and compiler-rt's fuzzer_no_main runtime.
runtime=$(ls "$(dirname "$(readlink -f "$(command -v swiftc)")")"/../lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a | head -1)
[ -f "$runtime" ] || { echo "fuzz: no libclang_rt.fuzzer_no_main in the toolchain"; exit 1; }
flags=(-Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,indirect-calls,trace-cmp,inline-8bit-counters,pc-table
       -Xswiftc -DPURSE_LIBFUZZER -Xlinker "$runtime")
swift build --scratch-path "$scratch" --product PurseFuzz "${flags[@]}" 2>&1 | { grep -E "error|Build complete" || true; }
binary=$(swift build --scratch-path "$scratch" "${flags[@]}" --show-bin-path)/PurseFuzz
[ -x "$binary" ] || { echo "fuzz: PurseFuzz did not build"; exit 1; }

status=0
# Leak reports are off: one-time initialisations (Apple's roots, BoringSSL's tables) hold memory
# for the process's life, which LeakSanitizer counts as leaked.
targets=${PURSE_FUZZ_TARGETS:-strictjson cbor jsdate decimal base64url hex uri checked authdata imageheader pdftext felt u256 strk starknetrpc flatjson chipslink appattest storekit p521}
for target in $targets; do
  work=$(mktemp -d)
  mkdir -p "Fuzz/corpus/$target"
  ASAN_OPTIONS=detect_leaks=0 PURSE_FUZZ_TARGET=$target "$binary" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -detect_leaks=0 \
    -artifact_prefix="$artifacts/$target-" "$work" "Fuzz/corpus/$target" > "$artifacts/$target.log" 2>&1 || {
      echo "fuzz: $target FAILED (input in $artifacts/$target-*)"; tail -30 "$artifacts/$target.log"; status=1; }
  runs=$(grep -Eo 'stat::number_of_executed_units: [0-9]+|#[0-9]+' "$artifacts/$target.log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  echo "fuzz: $target: $runs inputs in ${seconds}s, corpus $(ls "Fuzz/corpus/$target" | wc -l) committed + $(ls "$work" | wc -l) new"
  if [ "$update" = "--update" ]; then
    ASAN_OPTIONS=detect_leaks=0 PURSE_FUZZ_TARGET=$target "$binary" -merge=1 "Fuzz/corpus/$target" "$work" > /dev/null 2>&1 || true
  fi
  rm -rf "$work"
done
exit "$status"
