#!/usr/bin/env python3
"""Where the time under one function goes, from `perf script` output (perf record -g).

    perf script -i perf.data | swift demangle --simplified | benchmarks/perf-focus.py 'SQLiteConnectionHandle.execute'

Prints the share of all samples that pass through the focus frame, then the frames directly
below it ranked by inclusive share, and the leaf functions under it.
"""
import collections
import re
import sys

focus = sys.argv[1] if len(sys.argv) > 1 else None
depth = int(sys.argv[2]) if len(sys.argv) > 2 else 1
samples, stack = [], []
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        if stack:
            samples.append(stack)
        stack = []
        continue
    if line.startswith((" ", "\t")):
        parts = line.strip().split(" ", 1)
        name = parts[1] if len(parts) > 1 else parts[0]
        name = re.sub(r"\s+\(\S+\)$", "", name)
        name = re.sub(r"\+0x[0-9a-f]+$", "", name)
        stack.append(name[:150])
if stack:
    samples.append(stack)

total = len(samples)
below, leaves, hits = collections.Counter(), collections.Counter(), 0
for frames in samples:  # frames[0] is the leaf
    index = next((i for i, f in enumerate(frames) if focus is None or focus in f), None)
    if index is None:
        continue
    hits += 1
    leaves[frames[0]] += 1
    seen = set()
    for d in range(1, depth + 1):
        if index - d >= 0:
            name = frames[index - d]
            if name not in seen:
                below[("  " * (d - 1)) + name] += 1
                seen.add(name)
print(f"{hits / total:6.1%} of {total} samples pass through {focus!r}")
print("frames below:")
for name, count in below.most_common(25):
    print(f"  {count / total:6.1%}  {name}")
print("leaves:")
for name, count in leaves.most_common(20):
    print(f"  {count / total:6.1%}  {name}")
