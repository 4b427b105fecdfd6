#!/usr/bin/env python3
"""Every MyCHIPs chit chain in a provider's PostgreSQL database, checked from its rows by an
independent implementation (scripts/oracles/chips_records.py: Python's json and PyPI cryptography):
for each copy of each open or closed tally, its good chits are links 1…n in order, each link's
prior is the hash before it (the first, the tally's digest), each hash is j2h(core + {index,
prior, signed}), each chit's digest is j2h(core) and its signature verifies with the issuer's
key on the tally, and the last hash is the tally's chain_last.

usage: chips_chains.py DATABASE_URL     prints what it checked; exit status 1 at the first break
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "oracles"))
from chips_records import chain_hash, j2h, stable, verifies  # noqa: E402


def rows(url, query):
    out = subprocess.run(["psql", url, "-At", "-c", f"SELECT COALESCE(json_agg(r), '[]') FROM ({query}) r"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"FAIL psql: {out.stderr}")
    return json.loads(out.stdout)


def javascript_date(millis: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + ".%03dZ" % (millis % 1000)


def core(tally_uuid, chit):
    record = {"tally": tally_uuid, "by": chit["issuer"], "type": chit["chit_type"], "uuid": chit["chit_uuid"],
              "date": javascript_date(chit["chit_date"])}
    if chit["units"] is not None:
        record["units"] = chit["units"]
    if chit["reference"] is not None:
        reference = json.loads(chit["reference"])
        if reference is not None:
            record["ref"] = reference
    if chit["memo"] is not None:
        record["memo"] = chit["memo"]
    return record


def main():
    url = sys.argv[1]
    tallies = rows(url, "SELECT tally_ent, tally_seq, tally_uuid, tally_type, digest, chain_last, hold_cert, part_cert "
                        "FROM chips_tallies WHERE status IN ('open', 'close')")
    chits = rows(url, "SELECT chit_ent, chit_seq, chit_uuid, chit_type, chit_date, issuer, units, reference, memo, digest, "
                      "signature, chain_idx, chain_prev, chain_hash FROM chips_chits WHERE status = 'good'")
    by_tally = {}
    for chit in chits:
        by_tally.setdefault((chit["chit_ent"], chit["chit_seq"]), []).append(chit)
    links = 0
    for tally in tallies:
        key = (tally["tally_ent"], tally["tally_seq"])
        certs = {tally["tally_type"]: json.loads(tally["hold_cert"]),
                 ("foil" if tally["tally_type"] == "stock" else "stock"): json.loads(tally["part_cert"])}
        prior = tally["digest"]
        for index, chit in enumerate(sorted(by_tally.get(key, []), key=lambda c: c["chain_idx"]), start=1):
            record = core(tally["tally_uuid"], chit)
            where = f"tally {key} link {index} ({chit['chit_uuid']})"
            if chit["chain_idx"] != index or chit["chain_prev"] != prior:
                raise SystemExit(f"FAIL {where}: out of place (index {chit['chain_idx']})")
            if j2h(record) != chit["digest"]:
                raise SystemExit(f"FAIL {where}: its digest is not j2h of its core")
            if not verifies(certs[chit["issuer"]]["public"], chit["signature"], stable(record, drop_nulls=True)):
                raise SystemExit(f"FAIL {where}: not signed by its issuer's key on the tally")
            if chain_hash(record, index, prior, chit["signature"]) != chit["chain_hash"]:
                raise SystemExit(f"FAIL {where}: its hash is not the hash of its contents")
            prior = chit["chain_hash"]
            links += 1
        if prior != tally["chain_last"]:
            raise SystemExit(f"FAIL tally {key}: the chain ends at {prior}, the tally says {tally['chain_last']}")
    print(f"chit chains: {len(tallies)} tally copies, {links} links: every chain verifies (json.dumps + cryptography)")


if __name__ == "__main__":
    main()
