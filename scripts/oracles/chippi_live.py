#!/usr/bin/env python3
"""starknet-py (0.30) as an independent client of the ChippiPay provider of a running `purse serve`.

    python3 scripts/oracles/chippi_live.py URL PK:SK

The server runs with CHIPPI_SANDBOX_MERCHANT_KEYS=PK:SK. As a user: registers, saves a gasless
wallet (a starknet-py key pair; the provider deploys its account), checks that another
account's payment cannot buy for it, then pays two purchases from the wallet's vault with
starknet-py's own Account:
- a plain INVOKE of vault.withdraw(payment address, quoted STRK), then POST /v1/sku-transactions;
- gasless: starknet-py builds and signs its own SNIP-9 v2 outside execution (its typed data, its
  signer) with the caller, nonce and window /v1/paymaster/build chose; the provider relays it,
  and the purchase follows.
Both are followed to `completed`; the vault goes down by exactly the quotes. Exits non-zero on
the first mismatch.
"""

import asyncio
import datetime
import json
import sys
import time
import urllib.error
import urllib.request
import uuid
import warnings

from starknet_py.constants import OutsideExecutionInterfaceID
from starknet_py.hash.outside_execution import outside_execution_to_typed_data
from starknet_py.hash.selector import get_selector_from_name
from starknet_py.net.account.account import Account
from starknet_py.net.client_models import Call, OutsideExecution, OutsideExecutionTimeBounds
from starknet_py.net.full_node_client import FullNodeClient
from starknet_py.net.http_client import IncompatibleRPCVersionWarning
from starknet_py.net.signer.key_pair import KeyPair

warnings.simplefilter("error", IncompatibleRPCVersionWarning)
failures = 0


def check(condition, what):
    global failures
    print(("PASS " if condition else "FAIL ") + what)
    if not condition:
        failures += 1


def request(base, method, path, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, method=method, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


async def vault_balance(client, vault, owner):
    low, high = await client.call_contract(Call(to_addr=vault, selector=get_selector_from_name("balance_of"), calldata=[owner]))
    return low + (high << 128)


async def settled(base, keys, transaction_id):
    for _ in range(100):
        status, purchase = request(base, "GET", f"/v1/sku-transactions/{transaction_id}", headers=keys)
        if status == 200 and purchase["status"] != "pending":
            return purchase
        await asyncio.sleep(0.2)
    return purchase


async def main(base, pair):
    public, secret = pair.split(":", 1)
    keys = {"x-api-key": public, "Authorization": f"Bearer {secret}"}
    chain = json.load(urllib.request.urlopen(base + "/sandbox/starknet/accounts", timeout=10))
    client = FullNodeClient(node_url=base + "/starknet/rpc")
    chain_id = await client.get_chain_id()
    vault = int(chain["vault_address"], 16)
    holder = chain["accounts"][1]
    stranger = Account(address=int(holder["address"], 16), client=client, key_pair=KeyPair.from_private_key(int(holder["private_key"], 16)), chain=chain_id)

    # A user of this server, and a gasless wallet whose key starknet-py made.
    _, registered = request(base, "POST", "/auth/register", {"email": f"py-{uuid.uuid4().hex[:8]}@example.com", "password": "correct horse battery", "name": "Py"})
    token, user = registered["token"], registered["user"]["id"]
    status, refused = request(base, "POST", "/v1/chipi-wallets/prepare-creation", {"auth_token": token, "external_user_id": "someone_else"}, keys)
    check(status == 401, f"a wallet for another user than the token's is refused ({status})")
    _, prepared = request(base, "POST", "/v1/chipi-wallets/prepare-creation", {"auth_token": token, "external_user_id": user, "metadata": {}}, keys)
    wallet = prepared["wallet_id"]
    wallet_key = KeyPair.generate()
    status, _ = request(base, "POST", "/v1/chipi-wallets", {"wallet_id": wallet, "public_key": hex(wallet_key.public_key),
                                                            "encrypted_private_key": "v1.starknet-py-test-blob", "auth_token": token}, keys)
    check(status == 200, "the wallet is saved")
    _, shown = request(base, "GET", f"/v1/chipi-wallets/{wallet}", headers=keys)
    deployed = await client.get_class_hash_at(int(shown["address"], 16))
    check(deployed == int(prepared["account_class_hash"], 16), "the provider deployed the wallet's account at its counterfactual address")
    # The wallet's own account pays (the provider checks that a purchase's payer is its wallet),
    # funded by the sandbox.
    address = int(shown["address"], 16)
    account = Account(address=address, client=client, key_pair=wallet_key, chain=chain_id)
    status, _ = request(base, "POST", "/sandbox/starknet/mint", {"address": hex(address), "amount": "50"}, {"Idempotency-Key": str(uuid.uuid4())})
    check(status == 201, f"the sandbox funds the wallet ({status})")

    status, quote = request(base, "GET", "/v1/quote?sku_id=telcel_50", headers=keys)
    check(status == 200 and quote["strk_amount"] == "2.5", f"a quote of 2.5 STRK ({quote})")
    payment, amount = int(quote["payment_address"], 16), int(quote["strk_amount_fri"])
    deposit = [
        Call(to_addr=int(chain["strk_address"], 16), selector=get_selector_from_name("approve"), calldata=[vault, 10 * 10**18, 0]),
        Call(to_addr=vault, selector=get_selector_from_name("deposit"), calldata=[10 * 10**18, 0]),
    ]
    sent = await account.execute_v3(calls=deposit, auto_estimate=True)
    await client.wait_for_tx(sent.transaction_hash)
    before = await vault_balance(client, vault, address)
    withdraw = Call(to_addr=vault, selector=get_selector_from_name("withdraw"), calldata=[payment, amount, 0])

    # 0. Someone else's payment to the provider cannot buy for this wallet.
    sent = await stranger.execute_v3(calls=[Call(to_addr=int(chain["strk_address"], 16), selector=get_selector_from_name("transfer"),
                                                 calldata=[payment, amount, 0])], auto_estimate=True)
    await client.wait_for_tx(sent.transaction_hash)
    body = {"sku_id": "telcel_50", "reference": "5512345678", "amount": 50.0, "wallet_id": wallet,
            "vault_transaction_hash": hex(sent.transaction_hash), "metadata": {"client": "starknet-py"}}
    status, refused = request(base, "POST", "/v1/sku-transactions", body, {**keys, "Idempotency-Key": str(uuid.uuid4())})
    check(status == 422 and "not by wallet" in refused.get("error", ""), f"a payment by another account is not the wallet's ({status} {refused})")

    # 1. A plain INVOKE pays.
    sent = await account.execute_v3(calls=[withdraw], auto_estimate=True)
    await client.wait_for_tx(sent.transaction_hash)
    body = {"sku_id": "telcel_50", "reference": "5512345678", "amount": 50.0, "wallet_id": wallet,
            "vault_transaction_hash": hex(sent.transaction_hash), "metadata": {"client": "starknet-py"}}
    status, created = request(base, "POST", "/v1/sku-transactions", body, {**keys, "Idempotency-Key": str(uuid.uuid4())})
    check(status == 201 and created["status"] == "pending", f"the purchase is accepted ({status} {created})")
    done = await settled(base, keys, created["transaction_id"])
    check(done["status"] == "completed", "and completed")
    status, again = request(base, "POST", "/v1/sku-transactions", body, {**keys, "Idempotency-Key": str(uuid.uuid4())})
    check(status == 409, f"the same payment cannot buy twice ({status})")

    # 2. Gasless: starknet-py signs the outside execution the provider's paymaster chose.
    status, built = request(base, "POST", "/v1/paymaster/build",
                            {"account": hex(address), "calls": [{"to": hex(vault), "selector": hex(get_selector_from_name("withdraw")), "calldata": [hex(payment), hex(amount), "0x0"]}]}, keys)
    check(status == 200, f"the paymaster builds ({status})")
    execution = built["outside_execution"]
    bounds = OutsideExecutionTimeBounds(execute_after=datetime.datetime.fromtimestamp(execution["execute_after"], datetime.timezone.utc),
                                        execute_before=datetime.datetime.fromtimestamp(execution["execute_before"], datetime.timezone.utc))
    # What Account.sign_outside_execution_call does, step by step: its own typed data, its signer.
    # (Its typed-data encoder takes a selector as hex text; its calldata serializer then refuses
    # that text, so the call itself is not built here — the provider builds it.)
    as_text = Call(to_addr=withdraw.to_addr, selector=hex(withdraw.selector), calldata=withdraw.calldata)
    outside = OutsideExecution(caller=int(execution["caller"], 16), nonce=int(execution["nonce"], 16),
                               execute_after=bounds.execute_after_timestamp, execute_before=bounds.execute_before_timestamp, calls=[as_text])
    typed = outside_execution_to_typed_data(outside, OutsideExecutionInterfaceID.V2, chain_id)
    check(hex(typed.message_hash(address)) == built["message_hash"], "starknet-py hashes the outside execution as the provider does")
    signature = [hex(x) for x in account.signer.sign_message(typed, address)]
    check(len(signature) == 2, "starknet-py signs with two felts")
    wallet_before = await account.get_balance(int(chain["strk_address"], 16))
    status, relayed = request(base, "POST", "/v1/paymaster/execute", {"account": hex(address), "outside_execution": execution, "signature": signature}, keys)
    check(status == 202, f"the paymaster relays starknet-py's signature ({status} {relayed})")
    receipt = await client.wait_for_tx(int(relayed["transaction_hash"], 16))
    check(receipt.execution_status.name == "SUCCEEDED", "the relayed withdrawal succeeded")
    check(await account.get_balance(int(chain["strk_address"], 16)) == wallet_before, "the user paid no gas")
    body["vault_transaction_hash"] = relayed["transaction_hash"]
    status, created = request(base, "POST", "/v1/sku-transactions", body, {**keys, "Idempotency-Key": str(uuid.uuid4())})
    check(status == 201, f"the gasless payment buys ({status} {created})")
    done = await settled(base, keys, created["transaction_id"])
    check(done["status"] == "completed", "and completes")
    check(before - await vault_balance(client, vault, address) == 2 * amount, "the vault paid exactly the two quotes")
    status, again = request(base, "POST", "/v1/paymaster/execute", {"account": hex(address), "outside_execution": execution, "signature": signature}, keys)
    check(status == 200 and again["transaction_hash"] == relayed["transaction_hash"], f"asking again gives the same relay, not a second one ({status})")
    check(before - await vault_balance(client, vault, address) == 2 * amount, "and the vault paid nothing more")

    print("ALL PASS" if failures == 0 else f"{failures} FAILED")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1].rstrip("/"), sys.argv[2])))
