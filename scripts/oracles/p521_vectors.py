#!/usr/bin/env python3
"""ECDSA P-521 signatures made by an independent implementation (PyPI cryptography, OpenSSL),
for the tests that hold PurseP521's verification to it (Tests/PurseP521Tests/Fixtures):

  * signatures over SHA-384 (MyCHIPs' hash) and SHA-512 digests of random messages;
  * digests at the ends of the range, signed prehashed: all zeros (the scalar e = 0) and all
    ones (SHA-512's length, longer than the order, so truncated to its leftmost 521 bits);
  * each with its signature's s replaced by n − s (also valid) and a copy with one bit flipped
    (invalid), and keys whose point is moved off the curve (refused).

  p521_vectors.py OUT.json
"""
import json
import os
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils

N = 0x01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409


def raw_key(key) -> str:
    numbers = key.public_key().public_numbers()
    return (numbers.x.to_bytes(66, "big") + numbers.y.to_bytes(66, "big")).hex()


def raw_signature(r: int, s: int) -> str:
    return (r.to_bytes(66, "big") + s.to_bytes(66, "big")).hex()


def vector(key, digest: bytes, algorithm) -> list:
    r, s = utils.decode_dss_signature(key.sign(digest, ec.ECDSA(utils.Prehashed(algorithm))))
    flipped = bytearray(bytes.fromhex(raw_signature(r, s)))
    flipped[os.urandom(1)[0] % len(flipped)] ^= 1 << (os.urandom(1)[0] % 8)
    key_hex = raw_key(key)
    return [
        {"key": key_hex, "digest": digest.hex(), "signature": raw_signature(r, s), "valid": True},
        {"key": key_hex, "digest": digest.hex(), "signature": raw_signature(r, N - s), "valid": True},
        {"key": key_hex, "digest": digest.hex(), "signature": flipped.hex(), "valid": False},
    ]


def main() -> None:
    vectors = []
    for index in range(12):
        key = ec.generate_private_key(ec.SECP521R1())
        message = os.urandom(index * 7)
        for algorithm in (hashes.SHA384(), hashes.SHA512()):
            hasher = hashes.Hash(algorithm)
            hasher.update(message)
            vectors += vector(key, hasher.finalize(), algorithm)
    key = ec.generate_private_key(ec.SECP521R1())
    vectors += vector(key, bytes(48), hashes.SHA384())
    vectors += vector(key, b"\xff" * 64, hashes.SHA512())
    off = bytearray(bytes.fromhex(raw_key(key)))
    off[-1] ^= 1
    vectors.append({"key": off.hex(), "digest": "00" * 48, "signature": "00" * 132, "valid": False, "badKey": True})
    with open(sys.argv[1], "w") as out:
        json.dump({"source": "PyPI cryptography " + __import__("cryptography").__version__, "vectors": vectors}, out, indent=1)


if __name__ == "__main__":
    main()
