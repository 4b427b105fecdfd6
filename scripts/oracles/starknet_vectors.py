#!/usr/bin/env python3
"""Known-answer vectors for the `Starknet` module, produced by starknet-py (0.30).

    python3 scripts/oracles/starknet_vectors.py OUT.json

Every value is computed by starknet-py and the libraries it uses (crypto-cpp-py for Pedersen and
ECDSA, poseidon-py, pycryptodome's Keccak). `swift test` replays the committed copy in
Tests/StarknetTests/Fixtures/starknet_vectors.json; CI regenerates the file and compares.
Inputs come from a seeded generator, so the output is the same on every run.
"""

import json
import random
import sys

from starknet_py.cairo.felt import encode_shortstring
from starknet_py.constants import EC_ORDER
from starknet_py.hash.address import compute_address
from starknet_py.hash.outside_execution import outside_execution_to_typed_data
from starknet_py.hash.selector import get_selector_from_name
from starknet_py.hash.transaction import (
    CommonTransactionV3Fields,
    TransactionHashPrefix,
    compute_deploy_account_v3_transaction_hash,
    compute_invoke_v3_transaction_hash,
)
from starknet_py.hash.utils import (
    _starknet_keccak,
    compute_hash_on_elements,
    message_signature,
    pedersen_hash,
    private_to_stark_key,
    verify_message_signature,
)
from starknet_py.net.account.account import _parse_calls
from starknet_py.net.client_models import (
    Call,
    DAMode,
    OutsideExecution,
    ResourceBounds,
    ResourceBoundsMapping,
)
from starknet_py.constants import OutsideExecutionInterfaceID
from starknet_py.serialization.data_serializers.byte_array_serializer import ByteArraySerializer
from starknet_py.utils.typed_data import TypedData
from poseidon_py.poseidon_hash import poseidon_hash, poseidon_hash_many, poseidon_hash_single

P = 2**251 + 17 * 2**192 + 1
rng = random.Random(20261124)


def felt() -> int:
    return rng.randrange(P)


def h(x: int) -> str:
    return hex(x)


def hexes(xs):
    return [hex(x) for x in xs]


SN_SEPOLIA = encode_shortstring("SN_SEPOLIA")
SN_MAIN = encode_shortstring("SN_MAIN")


def selectors():
    names = ["transfer", "balance_of", "balanceOf", "approve", "allowance", "deposit", "withdraw",
             "__execute__", "__validate__", "__validate_deploy__", "execute_from_outside_v2",
             "Transfer", "Approval", "__default__", "__l1_default__", "get_public_key"]
    return [{"name": n, "selector": h(get_selector_from_name(n))} for n in names]


def keccak():
    inputs = [b"", b"abc", b"a" * 135, b"b" * 136, b"c" * 137, bytes(range(256)) * 2]
    return [{"data": d.hex(), "hash": h(_starknet_keccak(d))} for d in inputs]


def pedersen():
    pairs = [(0, 0), (1, 2), (P - 1, P - 1), (2**248 - 1, 2**248), (0, P - 1)]
    pairs += [(felt(), felt()) for _ in range(20)]
    return [{"a": h(a), "b": h(b), "hash": h(pedersen_hash(a, b))} for a, b in pairs]


def hash_on_elements():
    lists = [[], [1], [1, 2, 3], [felt() for _ in range(7)]]
    return [{"elements": hexes(xs), "hash": h(compute_hash_on_elements(xs))} for xs in lists]


def poseidon():
    out = {"pairs": [], "singles": [], "many": []}
    for a, b in [(0, 0), (1, 2), (P - 1, P - 1)] + [(felt(), felt()) for _ in range(10)]:
        out["pairs"].append({"a": h(a), "b": h(b), "hash": h(poseidon_hash(a, b))})
    for x in [0, 1, P - 1, felt(), felt()]:
        out["singles"].append({"x": h(x), "hash": h(poseidon_hash_single(x))})
    for n in [0, 1, 2, 3, 4, 5, 9, 16]:
        xs = [felt() for _ in range(n)]
        out["many"].append({"elements": hexes(xs), "hash": h(poseidon_hash_many(xs))})
    return out


def keys_and_signatures():
    keys, signatures = [], []
    privates = [1, 2, EC_ORDER - 1, 0x1234567890ABCDEF] + [rng.randrange(1, EC_ORDER) for _ in range(12)]
    for k in privates:
        keys.append({"private": h(k), "public": h(private_to_stark_key(k))})
    # Message hashes of every length class the RFC 6979 padding rule distinguishes.
    messages = [1, 0xFF, 2**247 + 5, 2**248 - 1, 2**248 + 7, 2**250 + 3, 2**251 - 1]
    messages += [rng.randrange(2**251) for _ in range(16)]
    for i, m in enumerate(messages):
        k = privates[i % len(privates)]
        public = private_to_stark_key(k)
        r, s = message_signature(m, k, seed=None)
        r32, s32 = message_signature(m, k)
        assert verify_message_signature(m, [r, s], public)
        assert verify_message_signature(m, [r, EC_ORDER - s], public)
        signatures.append({
            "private": h(k), "public": h(public), "hash": h(m),
            "r": h(r), "s": h(s),
            "seeded": {"r": h(r32), "s": h(s32)},
            "corrupted_verifies": verify_message_signature(m, [r, (s + 1) % EC_ORDER], public),
        })
    return keys, signatures


def bounds(l1, l1p, l2, l2p, d, dp):
    return ResourceBoundsMapping(
        l1_gas=ResourceBounds(max_amount=l1, max_price_per_unit=l1p),
        l2_gas=ResourceBounds(max_amount=l2, max_price_per_unit=l2p),
        l1_data_gas=ResourceBounds(max_amount=d, max_price_per_unit=dp),
    )


def common(prefix, version, address, tip, rb, paymaster, chain, nonce, nonce_da, fee_da):
    return CommonTransactionV3Fields(
        tx_prefix=prefix, version=version, address=address, tip=tip, resource_bounds=rb,
        paymaster_data=paymaster, chain_id=chain, nonce=nonce,
        nonce_data_availability_mode=nonce_da, fee_data_availability_mode=fee_da,
    )


def rb_json(rb):
    return {name: {"max_amount": h(getattr(rb, name).max_amount), "max_price_per_unit": h(getattr(rb, name).max_price_per_unit)}
            for name in ["l1_gas", "l2_gas", "l1_data_gas"]}


def invokes():
    out = []
    cases = [
        (SN_SEPOLIA, 3, 0, [], DAMode.L1, DAMode.L1),
        (SN_MAIN, 3, 1000, [], DAMode.L1, DAMode.L1),
        (SN_SEPOLIA, 2**128 + 3, 0, [7, 8], DAMode.L2, DAMode.L1),
        (SN_SEPOLIA, 3, 5, [felt()], DAMode.L1, DAMode.L2),
    ]
    for chain, version, tip, paymaster, nda, fda in cases:
        sender = rng.randrange(2**251 - 256)
        nonce = rng.randrange(1000)
        rb = bounds(rng.randrange(10**6), rng.randrange(10**15), rng.randrange(10**8), rng.randrange(10**10), rng.randrange(10**4), rng.randrange(10**12))
        calls = [Call(to_addr=felt(), selector=get_selector_from_name("approve"), calldata=[felt(), 10**18, 0]),
                 Call(to_addr=felt(), selector=get_selector_from_name("deposit"), calldata=[10**18, 0])]
        calldata = _parse_calls(1, calls)
        deployment = [] if tip else []
        tx_hash = compute_invoke_v3_transaction_hash(
            account_deployment_data=deployment, calldata=calldata,
            common_fields=common(TransactionHashPrefix.INVOKE, version, sender, tip, rb, paymaster, chain, nonce, nda, fda),
        )
        out.append({
            "chain_id": h(chain), "version": h(version), "sender_address": h(sender), "nonce": h(nonce), "tip": h(tip),
            "resource_bounds": rb_json(rb), "paymaster_data": hexes(paymaster), "account_deployment_data": hexes(deployment),
            "nonce_data_availability_mode": nda.name, "fee_data_availability_mode": fda.name,
            "calls": [{"to": h(c.to_addr), "selector": h(c.selector), "calldata": hexes(c.calldata)} for c in calls],
            "calldata": hexes(calldata), "hash": h(tx_hash),
        })
    return out


def deploy_accounts():
    out = []
    for chain, version in [(SN_SEPOLIA, 3), (SN_MAIN, 3), (SN_SEPOLIA, 2**128 + 3)]:
        class_hash, salt = felt(), felt()
        public = private_to_stark_key(rng.randrange(1, EC_ORDER))
        calldata = [public]
        address = compute_address(class_hash=class_hash, constructor_calldata=calldata, salt=salt)
        rb = bounds(rng.randrange(10**6), rng.randrange(10**15), rng.randrange(10**8), rng.randrange(10**10), rng.randrange(10**4), rng.randrange(10**12))
        tx_hash = compute_deploy_account_v3_transaction_hash(
            class_hash=class_hash, constructor_calldata=calldata, contract_address_salt=salt,
            common_fields=common(TransactionHashPrefix.DEPLOY_ACCOUNT, version, address, 0, rb, [], chain, 0, DAMode.L1, DAMode.L1),
        )
        out.append({
            "chain_id": h(chain), "version": h(version), "class_hash": h(class_hash), "contract_address_salt": h(salt),
            "constructor_calldata": hexes(calldata), "contract_address": h(address), "nonce": "0x0", "tip": "0x0",
            "resource_bounds": rb_json(rb), "paymaster_data": [],
            "nonce_data_availability_mode": "L1", "fee_data_availability_mode": "L1", "hash": h(tx_hash),
        })
    return out


def addresses():
    out = []
    for deployer, n in [(0, 0), (0, 1), (0, 3), (felt() % (2**251), 2)]:
        class_hash, salt = felt(), felt()
        calldata = [felt() for _ in range(n)]
        out.append({"class_hash": h(class_hash), "salt": h(salt), "constructor_calldata": hexes(calldata),
                    "deployer_address": h(deployer),
                    "address": h(compute_address(class_hash=class_hash, constructor_calldata=calldata, salt=salt, deployer_address=deployer))})
    return out


def byte_arrays():
    serializer = ByteArraySerializer()
    texts = ["", "a", "hello", "x" * 31, "y" * 32, "Purse - ChippiPay vault deposit " * 4]
    return [{"text": t, "serialized": hexes(serializer.serialize(t))} for t in texts]


def short_strings():
    texts = ["", "SN_SEPOLIA", "SN_MAIN", "L1_GAS", "STARKNET_CONTRACT_ADDRESS", "a" * 31]
    return [{"text": t, "felt": h(encode_shortstring(t))} for t in texts]


def typed_data():
    out = []
    account = felt() % (2**251 - 256)
    oe = OutsideExecution(
        caller=encode_shortstring("ANY_CALLER"), nonce=felt(), execute_after=1_700_000_000, execute_before=1_900_000_000,
        calls=[Call(to_addr=felt(), selector=get_selector_from_name("transfer"), calldata=[felt(), 25 * 10**17, 0])],
    )
    for chain in [SN_SEPOLIA, SN_MAIN]:
        # starknet-py's own helper leaves selectors as ints, which its encoder refuses; starknet.js
        # sends them as hex strings, as here.
        data = outside_execution_to_typed_data(oe, OutsideExecutionInterfaceID.V2, chain).to_dict()
        data["message"] = {
            "Caller": h(oe.caller), "Nonce": h(oe.nonce),
            "Execute After": h(oe.execute_after), "Execute Before": h(oe.execute_before),
            "Calls": [{"To": h(c.to_addr), "Selector": h(c.selector), "Calldata": hexes(c.calldata)} for c in oe.calls],
        }
        td = TypedData.from_dict(data)
        out.append({"name": "outside_execution_v2", "typed_data": data, "account": h(account),
                    "message_hash": h(td.message_hash(account))})
    rich = {
        "types": {
            "StarknetDomain": [
                {"name": "name", "type": "shortstring"}, {"name": "version", "type": "shortstring"},
                {"name": "chainId", "type": "shortstring"}, {"name": "revision", "type": "shortstring"},
            ],
            "Purchase": [
                {"name": "Buyer", "type": "ContractAddress"}, {"name": "Service", "type": "string"},
                {"name": "Amount", "type": "u256"}, {"name": "Fee", "type": "u128"},
                {"name": "Delta", "type": "i128"}, {"name": "Paid", "type": "bool"},
                {"name": "At", "type": "timestamp"}, {"name": "Entry", "type": "selector"},
                {"name": "Class", "type": "ClassHash"}, {"name": "Memo", "type": "shortstring"},
                {"name": "Tags", "type": "felt*"}, {"name": "Items", "type": "Item*"},
            ],
            "Item": [{"name": "Sku", "type": "felt"}, {"name": "Qty", "type": "u128"}],
        },
        "primaryType": "Purchase",
        "domain": {"name": "Purse", "version": "1", "chainId": "SN_SEPOLIA", "revision": "1"},
        "message": {
            "Buyer": h(account), "Service": "Airtime top-up for MTN, a description longer than thirty-one bytes",
            "Amount": {"low": "0x1bc16d674ec80000", "high": "0x0"}, "Fee": "1000", "Delta": "-42", "Paid": True,
            "At": 1_763_000_000, "Entry": "deposit", "Class": h(felt()), "Memo": "gift",
            "Tags": ["0x1", "0x2", "0x3"], "Items": [{"Sku": "0x10", "Qty": "2"}, {"Sku": "0x11", "Qty": "1"}],
        },
    }
    td = TypedData.from_dict(rich)
    out.append({"name": "rich", "typed_data": rich, "account": h(account), "message_hash": h(td.message_hash(account))})
    return out


def main():
    keys, signatures = keys_and_signatures()
    vectors = {
        "generator": "starknet-py 0.30 (scripts/oracles/starknet_vectors.py)",
        "selectors": selectors(), "keccak": keccak(), "pedersen": pedersen(),
        "hash_on_elements": hash_on_elements(), "poseidon": poseidon(),
        "keys": keys, "signatures": signatures, "invoke_v3": invokes(),
        "deploy_account_v3": deploy_accounts(), "addresses": addresses(),
        "byte_arrays": byte_arrays(), "short_strings": short_strings(), "typed_data": typed_data(),
    }
    with open(sys.argv[1], "w") as f:
        json.dump(vectors, f, indent=1, ensure_ascii=False, default=str)
        f.write("\n")


if __name__ == "__main__":
    main()
