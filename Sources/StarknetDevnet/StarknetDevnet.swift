import PurseDatabase

/// A Starknet devnet in the server's process: the STRK token, the ChippiPay vault, predeployed
/// and funded accounts, real transaction hashes and signatures, JSON-RPC 0.10 at
/// `POST /starknet/rpc`, and a faucet. `ChippiPayModule` mounts it in development.
public enum StarknetDevnet {
    /// The chain's tables (head, blocks, contracts, storage, transactions, events, mints). Its id
    /// predates the target and stays, so databases that ran it do not run it again.
    public static let migration = Migration("chippi_0001_starknet_sandbox", [
        """
        CREATE TABLE starknet_chain (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            chain_id TEXT NOT NULL,
            latest_block BIGINT NOT NULL CHECK (latest_block >= 0)
        )
        """,
        """
        CREATE TABLE starknet_blocks (
            number BIGINT PRIMARY KEY CHECK (number >= 0),
            hash TEXT UNIQUE,
            parent_hash TEXT,
            timestamp BIGINT NOT NULL,
            closed BOOLEAN NOT NULL,
            CHECK (closed = FALSE OR hash IS NOT NULL)
        )
        """,
        """
        CREATE TABLE starknet_contracts (
            address TEXT PRIMARY KEY,
            class_hash TEXT NOT NULL,
            nonce BIGINT NOT NULL DEFAULT 0 CHECK (nonce >= 0),
            deployed_block BIGINT NOT NULL
        )
        """,
        """
        CREATE TABLE starknet_storage (
            contract TEXT NOT NULL REFERENCES starknet_contracts(address),
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (contract, key)
        )
        """,
        """
        CREATE TABLE starknet_transactions (
            hash TEXT PRIMARY KEY,
            block_number BIGINT NOT NULL REFERENCES starknet_blocks(number),
            position BIGINT NOT NULL CHECK (position >= 0),
            type TEXT NOT NULL CHECK (type IN ('INVOKE', 'DEPLOY_ACCOUNT')),
            sender TEXT NOT NULL,
            body TEXT NOT NULL,
            execution_status TEXT NOT NULL CHECK (execution_status IN ('SUCCEEDED', 'REVERTED')),
            revert_reason TEXT,
            actual_fee TEXT NOT NULL,
            l1_gas BIGINT NOT NULL CHECK (l1_gas >= 0),
            l1_data_gas BIGINT NOT NULL CHECK (l1_data_gas >= 0),
            l2_gas BIGINT NOT NULL CHECK (l2_gas >= 0),
            state_diff_length BIGINT NOT NULL CHECK (state_diff_length >= 0),
            UNIQUE (block_number, position),
            CHECK ((execution_status = 'REVERTED') = (revert_reason IS NOT NULL))
        )
        """,
        "CREATE INDEX starknet_transactions_sender ON starknet_transactions (sender)",
        """
        CREATE TABLE starknet_events (
            transaction_hash TEXT NOT NULL REFERENCES starknet_transactions(hash),
            position BIGINT NOT NULL CHECK (position >= 0),
            block_number BIGINT NOT NULL,
            from_address TEXT NOT NULL,
            keys TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (transaction_hash, position)
        )
        """,
        "CREATE INDEX starknet_events_block ON starknet_events (block_number, from_address)",
        """
        CREATE TABLE starknet_mints (
            idempotency_key TEXT PRIMARY KEY,
            request_hash TEXT NOT NULL,
            address TEXT NOT NULL,
            amount TEXT NOT NULL,
            response TEXT NOT NULL,
            created_at BIGINT NOT NULL
        )
        """,
    ])
}
