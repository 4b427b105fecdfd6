#!/usr/bin/env python3
"""starknet-py (0.30) as the client of the sandbox Starknet node of a running `purse serve`.

    python3 scripts/oracles/starknet_live.py URL

Reads the chain id, nonces and balances, sends an approve + deposit multicall signed by its own
Account (fee estimated by the node), waits for the receipt, sees the balances move, withdraws,
deploys a new account, and has a corrupted signature and a replayed nonce refused with the
specification's error codes. Exits non-zero on the first mismatch.
"""

import asyncio
import dataclasses
import json
import sys
import urllib.request
import uuid
import warnings

from starknet_py.hash.address import compute_address
from starknet_py.hash.selector import get_selector_from_name
from starknet_py.net.account.account import Account
from starknet_py.net.client_errors import ClientError
from starknet_py.net.client_models import Call
from starknet_py.net.full_node_client import FullNodeClient
from starknet_py.net.signer.key_pair import KeyPair
from starknet_py.net.http_client import IncompatibleRPCVersionWarning

warnings.simplefilter("error", IncompatibleRPCVersionWarning)

STRK = 10**18
failures = 0


def check(condition, what):
    global failures
    print(("PASS " if condition else "FAIL ") + what)
    if not condition:
        failures += 1


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def mint(base, address, amount):
    request = urllib.request.Request(
        base + "/sandbox/starknet/mint", method="POST",
        data=json.dumps({"address": hex(address), "amount": amount}).encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": str(uuid.uuid4())},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


async def u256(client, contract, entrypoint, *args):
    low, high = await client.call_contract(Call(to_addr=contract, selector=get_selector_from_name(entrypoint), calldata=list(args)))
    return low + (high << 128)


async def main(base):
    chain = get_json(base + "/sandbox/starknet/accounts")
    client = FullNodeClient(node_url=base + "/starknet/rpc")
    check(await client.spec_version() == "0.10.2", "specVersion is 0.10.2")
    chain_id = await client.get_chain_id()
    check(chain_id == hex(int.from_bytes(b"SN_SEPOLIA", "big")), f"chainId {chain_id} is SN_SEPOLIA")
    strk = int(chain["strk_address"], 16)
    vault = int(chain["vault_address"], 16)
    first, second = chain["accounts"][0], chain["accounts"][1]
    address = int(first["address"], 16)
    account = Account(address=address, client=client, key_pair=KeyPair.from_private_key(int(first["private_key"], 16)), chain=chain_id)

    nonce = await account.get_nonce()
    wallet = await u256(client, strk, "balance_of", address)
    vaulted = await u256(client, vault, "balance_of", address)
    check(wallet > 10 * STRK, f"the account holds {wallet / STRK} STRK")

    amount = 10 * STRK
    calls = [
        Call(to_addr=strk, selector=get_selector_from_name("approve"), calldata=[vault, amount, 0]),
        Call(to_addr=vault, selector=get_selector_from_name("deposit"), calldata=[amount, 0]),
    ]
    sent = await account.execute_v3(calls=calls, auto_estimate=True)
    receipt = await client.wait_for_tx(sent.transaction_hash, check_interval=0.2, retries=100)
    check(receipt.execution_status.name == "SUCCEEDED", "the deposit multicall succeeded")
    fee = receipt.actual_fee.amount
    check(await u256(client, vault, "balance_of", address) == vaulted + amount, "the vault balance grew by 10 STRK")
    check(await u256(client, strk, "balance_of", address) == wallet - amount - fee, "the wallet paid 10 STRK and the fee")
    check(await account.get_nonce() == nonce + 1, "the nonce advanced")
    check(any(event.keys[0] == get_selector_from_name("Deposit") for event in receipt.events), "the receipt has the vault's Deposit event")

    recipient = int(second["address"], 16)
    before = await u256(client, strk, "balance_of", recipient)
    sent = await account.execute_v3(
        calls=[Call(to_addr=vault, selector=get_selector_from_name("withdraw"), calldata=[recipient, 25 * STRK // 10, 0])], auto_estimate=True)
    receipt = await client.wait_for_tx(sent.transaction_hash, check_interval=0.2, retries=100)
    check(receipt.execution_status.name == "SUCCEEDED", "withdraw(recipient, 2.5 STRK) succeeded")
    check(await u256(client, strk, "balance_of", recipient) == before + 25 * STRK // 10, "the recipient received 2.5 STRK")

    # A corrupted signature is refused before inclusion (55, validation failure).
    transfer = Call(to_addr=strk, selector=get_selector_from_name("transfer"), calldata=[recipient, 1, 0])
    tx = await account.sign_invoke_v3(calls=[transfer], auto_estimate=True)
    bad = dataclasses.replace(tx, signature=[tx.signature[0], tx.signature[1] + 1])
    try:
        await client.send_transaction(bad)
        check(False, "a corrupted signature is refused")
    except ClientError as error:
        check(error.code == 55, f"a corrupted signature is refused with 55 ({error.code})")

    # The same nonce again, after a transaction used it (52).
    used = await account.get_nonce()
    first_tx = await account.sign_invoke_v3(calls=[transfer], nonce=used, auto_estimate=True)
    await client.send_transaction(first_tx)
    replay = await account.sign_invoke_v3(calls=[Call(to_addr=strk, selector=get_selector_from_name("transfer"), calldata=[recipient, 2, 0])],
                                          nonce=used, auto_estimate=False, resource_bounds=first_tx.resource_bounds)
    try:
        await client.send_transaction(replay)
        check(False, "a replayed nonce is refused")
    except ClientError as error:
        check(error.code == 52, f"a replayed nonce is refused with 52 ({error.code})")

    # A new account: funded at its future address, then deployed by starknet-py.
    key = KeyPair.generate()
    class_hash = int(chain["account_class_hash"], 16)
    future = compute_address(class_hash=class_hash, constructor_calldata=[key.public_key], salt=key.public_key)
    mint(base, future, "5")
    deployed = await Account.deploy_account_v3(address=future, class_hash=class_hash, salt=key.public_key, key_pair=key,
                                               client=client, constructor_calldata=[key.public_key], auto_estimate=True)
    await deployed.wait_for_acceptance(check_interval=0.2, retries=100)
    check(await deployed.account.get_nonce() == 1, "a new account deployed by DEPLOY_ACCOUNT v3")
    block = await client.get_block_with_tx_hashes(block_number="latest")
    check(block.block_number >= 4, f"blocks advanced to {block.block_number}")
    return failures


if __name__ == "__main__":
    sys.exit(1 if asyncio.run(main(sys.argv[1].rstrip("/"))) else 0)
