#!/usr/bin/env python3
"""docs/benchmarks.md's figures, from the JSON benchmarks/run.sh writes.

    python3 benchmarks/report.py [RESULTS] [--check]

Rewrites the part of docs/benchmarks.md between `<!-- figures:begin -->` and `<!-- figures:end -->`
from RESULTS (default benchmarks/results.json). With --check it changes nothing and fails when the
document is not what RESULTS makes (CI runs it so).
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"


def rate(value):
    return f"{value:,.0f} /s"


def ms(value):
    return f"{value:.2f} ms"


def phases_table(run):
    lines = ["| phase | rate | p50 | p99 | CPU per operation | errors |", "|---|---|---|---|---|---|"]
    for p in run["phases"]:
        lines.append(f"| {p['name']} | {rate(p['per_second'])} | {ms(p['p50_ms'])} | {ms(p['p99_ms'])} | "
                     f"{p['cpu_ms_per_op']:.3f} ms | {p['errors']} |")
    return lines


def figure_value(f):
    return f"{f['value']:.1f} %" if f["unit"] == "%" else f"{f['value']:,.0f} {f['unit']}"


def verdict(f):
    if f.get("met") is None:
        return "—"
    return "met" if f["met"] else "**not met**"


def figures_table(figures):
    figures = [f for f in figures if f.get("target")]
    if not figures:
        return []
    lines = ["", "| figure | value | target | |", "|---|---|---|---|"]
    for f in figures:
        lines.append(f"| `{f['key']}` | {figure_value(f)} | {f['target']} | {verdict(f)} |")
    return lines


TITLES = [
    ("nexus", "Nexus Data: `purse bench nexus` (32 connections, lean load generator)"),
    ("starknet", "Starknet: `purse bench starknet` (crypto on one core; invokes on 16 connections)"),
    ("chippi", "ChippiPay: `purse bench chippi` (16 connections, each with a funded account)"),
    ("cutie", "Cuti-E: `purse bench cutie --assert` (16 devices, every request signed)"),
    ("chips", "MyCHIPs: `purse bench chips` (32 websocket connections)"),
    ("chips-chits", "MyCHIPs: `purse bench chips --chits` (32 pairs of users)"),
]


def render(results):
    out = [BEGIN, "",
           f"Commit `{results['commit']}`, {results['date']}; {results['machine']['cpus']} CPUs "
           f"({results['machine']['model']}), {results['machine']['memory_gib']} GiB, Linux {results['machine']['kernel']}; "
           f"{results['toolchain']}; release build, {results['seconds_per_phase']} s per phase. "
           "Made by `benchmarks/run.sh`; the tables below are written from its JSON by `benchmarks/report.py`.", ""]
    out += ["### In-process, SQLite", "",
            "Server and load generator share the cores; CPU per operation is both together."]
    for key, title in TITLES:
        run = results["in_process"][key]
        out += ["", f"#### {title}", ""] + phases_table(run) + figures_table(run["figures"])
        untargeted = [f for f in run["figures"] if not f.get("target")]
        if untargeted:
            out += ["", "Also: " + "; ".join(f"`{f['key']}` {figure_value(f)}" for f in untargeted) + "."]
    pg = results["postgres"]
    before, after = pg["pgbench_tps"]
    out += ["", "### PostgreSQL, one replica", "",
            f"`pgbench -N` with 32 clients on the same server: {before:,.0f} tps before and {after:,.0f} tps after "
            "`purse bench nexus --server` (32 connections) against `purse serve` on it.", ""]
    out += phases_table(pg["nexus"]) + figures_table(pg["figures"])
    out += ["", "### Replicas behind nginx", "",
            "| replicas | `pgbench -N` | top-up alone | top-up p99 | ChippiPay `GET /v1/skus` | purchases |",
            "|---|---|---|---|---|---|"]
    for n, cluster in sorted(results["replicas"].items()):
        topup = next(p for p in cluster["nexus"]["phases"] if p["name"].startswith("top-up alone"))
        skus = next(p for p in cluster["chippi"]["phases"] if p["name"].startswith("GET /v1/skus"))
        purchases = next((p for p in cluster["chippi"]["phases"] if p["name"].startswith("purchase")), None)
        out.append(f"| {n} | {cluster['pgbench_tps']:,.0f} tps | {rate(topup['per_second'])} | {ms(topup['p99_ms'])} | "
                   f"{rate(skus['per_second'])} | {rate(purchases['per_second']) if purchases else '—'} |")
    out += figures_table(results["replica_figures"])
    out += ["", END]
    return "\n".join(out)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv[1:]
    path = args[0] if args else os.path.join(ROOT, "benchmarks", "results.json")
    with open(path) as f:
        results = json.load(f)
    with open(DOC) as f:
        doc = f.read()
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    new = doc[:start] + render(results) + doc[end:]
    if check:
        if new != doc:
            sys.exit("docs/benchmarks.md's figures are not what " + os.path.relpath(path, ROOT) + " makes: run benchmarks/report.py")
        print("docs/benchmarks.md's figures match " + os.path.relpath(path, ROOT))
        return
    with open(DOC, "w") as f:
        f.write(new)


if __name__ == "__main__":
    main()
