#!/usr/bin/env python3
"""starknet-py's own crypto rates on this machine, to set beside `purse bench starknet`.

    pip install starknet-py==0.30.0
    python3 benchmarks/starknet_py.py [SECONDS_PER_OPERATION]

The same operations, inputs and order as the Swift benchmark's crypto phase, each on one core:
pedersen(a, b) and sign/verify through crypto-cpp-py (StarkWare's C++), Poseidon through
poseidon-py (C). Prints one line per operation in the Swift benchmark's format.
"""
import os
import sys
import time

# This file's name is the package's: import the package, not this file.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

from poseidon_py.poseidon_hash import poseidon_hash, poseidon_hash_many
from starknet_py.hash.utils import message_signature, pedersen_hash, private_to_stark_key, verify_message_signature

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
KEY = 0x2BF5A6F54BBE744B893D351A825EC1A7D9D342ADBE963A69423200463A78752
EIGHT = list(range(1, 9))


def rate(name, body):
    body(0)  # warm-up, as the Swift side builds its tables first
    operations = 0
    cpu = time.process_time()
    start = time.perf_counter()
    end = start + SECONDS
    while True:
        for index in range(64):
            body(operations + index)
        operations += 64
        if time.perf_counter() >= end:
            break
    elapsed = time.perf_counter() - start
    per_op = (time.process_time() - cpu) / operations * 1e6
    print(f"{name:<40} {operations / elapsed:10.0f} /s   cpu {per_op:.1f} µs/op", flush=True)


def main():
    print(f"starknet-py: {SECONDS} s each on one core")
    state = {"felt": 0x12345678}

    def pedersen(_):
        state["felt"] = pedersen_hash(state["felt"], 0xABCDEF)

    def poseidon(_):
        state["felt"] = poseidon_hash(state["felt"], 0xABCDEF)

    def poseidon_many(index):
        state["felt"] = poseidon_hash_many([state["felt"], index] + EIGHT)

    rate("pedersen(a, b)", pedersen)
    rate("poseidon(a, b)", poseidon)
    rate("poseidon_hash_many (10 felts)", poseidon_many)

    hashes = []

    def message(index):
        return poseidon_hash(index, 0x5EED)

    def sign(index):
        h = message(index)
        message_signature(h, KEY, seed=None)
        if len(hashes) < 4096:
            hashes.append(h)

    rate("sign (RFC 6979 k)", sign)
    public = private_to_stark_key(KEY)
    signatures = [message_signature(h, KEY, seed=None) for h in hashes]
    valid = [0]

    def verify(index):
        slot = index % len(signatures)
        r, s = signatures[slot]
        if verify_message_signature(hashes[slot], [r, s], public):
            valid[0] += 1

    rate("verify", verify)
    if valid[0] == 0:
        sys.exit("no signature verified")


if __name__ == "__main__":
    main()
