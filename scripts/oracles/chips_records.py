#!/usr/bin/env python3
"""MyCHIPs tallies and chits, checked by an independent implementation (Python's json and PyPI
cryptography) of what the real MyCHIPs backend does:

  * a record's digest is mychips.j2h: SHA-256 of json.dumps(record, separators=(',', ':'),
    sort_keys=True), base64url without padding;
  * a tally is signed over its json_core as json-stable-stringify writes it (keys sorted, nulls
    kept), a chit over its core with nulls dropped — ECDSA P-521 / SHA-384, raw r‖s, base64url;
  * each good chit is a link of its tally's chain: hash = j2h(core + {index, prior, sign}),
    prior the previous link's hash, the first prior the tally's digest.

  chips_records.py verify VECTORS.json   checks records our Swift code made (digests, signatures, chain)
  chips_records.py make OUT.json         makes records here (fresh keys) for the Swift tests to check
"""
import base64
import json
import sys
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def j2h(record) -> str:
    import hashlib
    return b64u(hashlib.sha256(json.dumps(record, separators=(",", ":"), sort_keys=True).encode()).digest())


def stable(record, drop_nulls: bool) -> str:
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not (drop_nulls and v is None)}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return json.dumps(strip(record), separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def public_key(jwk: dict):
    x = int.from_bytes(unb64u(jwk["x"]), "big")
    y = int.from_bytes(unb64u(jwk["y"]), "big")
    return ec.EllipticCurvePublicNumbers(x, y, ec.SECP521R1()).public_key()


def verifies(jwk: dict, signature: str, text: str) -> bool:
    raw = unb64u(signature)
    if len(raw) != 132:
        return False
    der = encode_dss_signature(int.from_bytes(raw[:66], "big"), int.from_bytes(raw[66:], "big"))
    try:
        public_key(jwk).verify(der, text.encode(), ec.ECDSA(hashes.SHA384()))
        return True
    except InvalidSignature:
        return False


def sign(key, text: str) -> str:
    r, s = decode_dss_signature(key.sign(text.encode(), ec.ECDSA(hashes.SHA384())))
    return b64u(r.to_bytes(66, "big") + s.to_bytes(66, "big"))


def jwk_of(key) -> dict:
    numbers = key.public_key().public_numbers()
    return {"kty": "EC", "crv": "P-521", "x": b64u(numbers.x.to_bytes(66, "big")), "y": b64u(numbers.y.to_bytes(66, "big"))}


def chain_hash(core: dict, index: int, prior: str, signed) -> str:
    record = dict(core)
    record.update({"index": index, "prior": prior})
    if signed is not None:
        record["sign"] = signed
    return j2h(record)


def verify(path: str) -> None:
    vectors = json.load(open(path))
    checks = 0
    for case in vectors:
        tally = case["tally"]
        assert j2h(tally["core"]) == tally["digest"], "tally digest is j2h of its core"
        assert stable(tally["core"], drop_nulls=False) == tally["signing_text"], "tally signing text is the stable JSON, nulls kept"
        for side in ("stock", "foil"):
            assert verifies(tally["core"][side]["cert"]["public"], tally["signatures"][side], tally["signing_text"]), f"{side} signature"
        prior = tally["digest"]
        for index, link in enumerate(case["chits"], start=1):
            core = link["core"]
            assert stable(core, drop_nulls=True) == link["signing_text"], "chit signing text is the stable JSON, nulls dropped"
            assert j2h(core) == link["digest"], "chit digest"
            assert verifies(tally["core"][core["by"]]["cert"]["public"], link["signed"], link["signing_text"]), "chit signed by its issuer"
            assert link["index"] == index and link["prior"] == prior, "chain order"
            assert chain_hash(core, index, prior, link["signed"]) == link["hash"], "chain hash"
            prior = link["hash"]
            checks += 5
        checks += 4
    print(f"{checks} checks of our tallies, chits and chains passed (json.dumps + cryptography)")


def make(path: str) -> None:
    stock, foil = ec.generate_private_key(ec.SECP521R1()), ec.generate_private_key(ec.SECP521R1())
    def cert(name, key, cuid):
        return {"chad": {"cuid": cuid, "agent": "oracle-agent", "host": "127.0.0.1", "port": 43210}, "type": "p",
                "name": {"surname": name, "first": None}, "public": jwk_of(key), "connect": [], "place": [], "identity": {},
                "date": "2026-01-02T03:04:05.678Z"}
    core = {"version": 1, "revision": 1, "uuid": str(uuid.uuid4()), "date": "2026-11-25T10:11:12.345Z", "memo": None,
            "agree": {"source": "byZENT6Lqdub9ew8tQnvyTGgVduELz-j6zfjHM-tgs8"},
            "stock": {"cert": cert("Stöck", stock, "stock"), "terms": {"limit": 100, "call": 30}},
            "foil": {"cert": cert("Foil", foil, "foil"), "terms": {"limit": 50}}}
    text = stable(core, drop_nulls=False)
    tally = {"core": core, "digest": j2h(core), "signing_text": text, "signatures": {"stock": sign(stock, text), "foil": sign(foil, text)}}
    chits, prior = [], tally["digest"]
    for index, (by, units, memo) in enumerate([("foil", 12500, "Hedges ✂"), ("stock", 3000, None), ("foil", 1, "a \"quoted\" memo\n")], start=1):
        chit = {"tally": core["uuid"], "by": by, "type": "tran", "uuid": str(uuid.uuid4()), "date": f"2026-11-25T11:00:0{index}.123Z", "units": units}
        if memo is not None:
            chit["memo"] = memo
        chit_text = stable(chit, drop_nulls=True)
        signed = sign(stock if by == "stock" else foil, chit_text)
        link = {"core": chit, "signing_text": chit_text, "digest": j2h(chit), "signed": signed, "index": index, "prior": prior,
                "hash": chain_hash(chit, index, prior, signed)}
        chits.append(link)
        prior = link["hash"]
    with open(path, "w") as out:
        json.dump([{"tally": tally, "chits": chits}], out, ensure_ascii=False, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "verify":
        verify(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        raise SystemExit(__doc__)
