#!/usr/bin/env bash
# Runs the command sequences the docs show, verbatim: each ```sh block that follows a
# `<!-- ci: run -->` line, in order, per file. Each file gets a fresh server (on a free port, its
# data in ./data of a fresh working directory, as `swift run purse serve` keeps it) and a fresh
# PURSE_HOME; the repository's Tests are linked in, so paths the docs give from the repository's
# root hold. `swift run purse` runs the built binary; a line that starts the server is the server
# this script started, and PURSE_SERVER points the clients at it. A line ending in a backslash
# continues on the next. Fails on the first command that fails.
#   scripts/docs-run.sh FILE...
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/lib/server.sh
PURSE="$root/${PURSE#./}"
[ "${PURSE:0:1}" = / ] || PURSE="$root/$PURSE"
status=0 ran=0
for doc in "$@"; do
  work=$(mktemp -d /tmp/purse-docs.XXXXXX)
  script="$work/sequence.sh"
  python3 - "$doc" "$PURSE" > "$script" <<'PY'
import re, shlex, sys
doc, purse = sys.argv[1], sys.argv[2]
lines = open(doc).read().splitlines()
out, armed, inside = ["set -euo pipefail"], False, False
joined = []
for line in lines:
    if joined and joined[-1].endswith("\\"):
        joined[-1] = joined[-1][:-1].rstrip() + " " + line.strip()
    else:
        joined.append(line)
for line in joined:
    if line.strip() == "<!-- ci: run -->":
        armed = True
        continue
    if armed and not inside and line.startswith("```sh"):
        inside = True
        continue
    if inside and line.startswith("```"):
        inside = armed = False
        continue
    if inside:
        if not line.strip() or re.match(r"^\s*swift run purse serve\b", line):
            continue
        out.append("echo " + shlex.quote("$ " + line.split("  #")[0].rstrip()))
        out.append(line.replace("swift run purse ", shlex.quote(purse) + " "))
print("\n".join(out))
PY
  if [ "$(grep -c . "$script")" -le 1 ]; then rm -rf "$work"; continue; fi
  ran=$((ran + 1))
  (
    cd "$work"
    export PURSE_HOME="$work/home"
    ln -s "$root/Tests" Tests   # files the docs name from the repository's root
    start_server "$work"
    export PURSE_SERVER="$url"   # the clients' default server, as `swift run purse serve` would be
    trap 'stop_server || true' EXIT
    echo "== $doc"
    if ! bash "$script" > "$work/out.log" 2>&1; then
      echo "docs-run: a command in $doc failed:"; tail -25 "$work/out.log"; exit 1
    fi
    grep '^\$ ' "$work/out.log" | sed 's/^/  /'
  ) || status=1
  rm -rf "$work"
done
[ "$ran" -gt 0 ] || { echo "docs-run: no block marked <!-- ci: run --> in $*"; exit 1; }
exit $status
