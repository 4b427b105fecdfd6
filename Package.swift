// swift-tools-version: 6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// Server modules: nonisolated async functions run on their caller's executor (SE-0461) instead of
/// hopping to the global one at every call — on the SQLite writer's thread, a runtime check per
/// call, dozens per top-up.
let serverSwiftSettings = swiftSettings + [
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
]

extension TargetDependencyCondition {
    /// Only with the `Server` trait: every use of a server package carries it, so an app that
    /// depends on the client products with `traits: []` resolves none of the server's packages
    /// (docs/clients.md lists what it does fetch).
    static var server: TargetDependencyCondition? { .when(traits: ["Server"]) }
}

let package = Package(
    name: "purse",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "purse", targets: ["purse"]),
        .library(name: "PurseHTTP", targets: ["PurseHTTP"]),
        .library(name: "PurseHTTPNIO", targets: ["PurseHTTPNIO"]),
        .library(name: "PurseKit", targets: ["PurseKit"]),
        .library(name: "NexusPay", targets: ["NexusPay"]),
        .library(name: "StripeConnect", targets: ["StripeConnect"]),
        .library(name: "Starknet", targets: ["Starknet"]),
        .library(name: "ChippiPay", targets: ["ChippiPay"]),
        .library(name: "CutiE", targets: ["CutiE"]),
        .library(name: "MyCHIPs", targets: ["MyCHIPs"]),
    ],
    traits: [
        .trait(name: "Server", description: "The services, the CLI and their packages (Hummingbird, NIO, PostgreSQL, SQLite)."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "4.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.30.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.30.0"),
        // PurseSQLite's hooks reach into the SQLite that sqlite-nio bundles (3.54.1 in 1.13.2) and
        // into its VaporCSQLite module, which is not one of its products: a new SQLite must be
        // validated against them first (SQLiteVersionTests says what to check).
        .package(url: "https://github.com/vapor/sqlite-nio.git", .upToNextMinor(from: "1.13.2")),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        // Hummingbird's websocket core (the library under HummingbirdWebSocket): frames, pings and
        // closing handshakes for the MyCHIPs provider and the client cores' websocket transport.
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.0"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit.git", from: "4.5.0"),
    ],
    targets: [
        // MARK: - Fuzzing

        // libFuzzer harnesses over every parser of untrusted bytes (scripts/fuzz/libfuzzer.sh
        // builds them with -sanitize=fuzzer,address; a plain build replays inputs).
        .executableTarget(
            name: "PurseFuzz",
            dependencies: ["PurseFormats", "Starknet", "MyCHIPs", "PurseServer", "CutiEService", "CLibFuzzer", "PurseP521",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "X509", package: "swift-certificates")],
            swiftSettings: swiftSettings
        ),
        // The declaration of libFuzzer's driver, which PurseFuzz calls when built for fuzzing.
        .target(name: "CLibFuzzer"),

        // MARK: - Shared formats (both sides)

        // Wire formats that clients and services share: base64url, hex, CBOR. Imports nothing of ours.
        .target(
            name: "PurseFormats",
            swiftSettings: swiftSettings
        ),

        // ECDSA verification over P-521 for the MyCHIPs provider's chit checks: a second
        // implementation beside swift-crypto's, switched off with CHIPS_SIGNATURE_VERIFIER=swift-crypto.
        .target(name: "PurseP521", dependencies: ["PurseFormats"], swiftSettings: swiftSettings),

        // The Starknet protocol: field, curve, hashes, signatures, transactions, typed data.
        // Client cores and services both use it.
        .target(
            name: "Starknet",
            dependencies: [
                "PurseFormats",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        // The words each system's app and service share on the wire: statuses, kinds and typed
        // ids. The client core re-exports its system's vocabulary; the service encodes the same.
        .target(name: "NexusVocabulary", dependencies: ["PurseFormats"], swiftSettings: swiftSettings),
        .target(
            name: "ChippiPayVocabulary",
            dependencies: ["PurseFormats", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CutiEVocabulary",
            dependencies: ["PurseFormats", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: swiftSettings
        ),

        // MARK: - Shared HTTP (both sides)

        // The outbound transport, the one error taxonomy, retries, polling and idempotency keys.
        // Services, PurseAPNs and Starknet import only this of the client half.
        .target(
            name: "PurseHTTP",
            dependencies: [
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        // PurseHTTP's transports over NIO: AsyncHTTPClient, the websocket client, pinned TLS.
        .target(
            name: "PurseHTTPNIO",
            dependencies: [
                "PurseHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .server),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .server),
                .product(name: "NIOPosix", package: "swift-nio", condition: .server),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .server),
                .product(name: "NIOTLS", package: "swift-nio", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "WSClient", package: "swift-websocket", condition: .server),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .server),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Shared client plumbing

        // The client app's half over PurseHTTP: the API client and session, SecureStore,
        // BiometricGate, device keys, preferences.
        .target(
            name: "PurseKit",
            dependencies: [
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Client cores

        .target(
            name: "NexusPay",
            dependencies: [
                "NexusVocabulary",
                "PurseKit",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "PurseFormats",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        .target(
            name: "StripeConnect",
            dependencies: ["PurseKit", "PurseHTTP", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: swiftSettings
        ),

        // The ChippiPay app's core: the Starknet wallet and vault (StarknetManager), the provider's
        // API, the gasless wallet and purchases (ChippiPayManager).
        .target(
            name: "ChippiPay",
            dependencies: [
                "ChippiPayVocabulary",
                "Starknet",
                "PurseKit",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "PurseFormats",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // The Cuti-E feedback SDK: conversations, inbox, push registration, device linking, and
        // the view models of its screens.
        .target(
            name: "CutiE",
            dependencies: [
                "CutiEVocabulary",
                "PurseKit",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "PurseFormats",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: swiftSettings
        ),

        // The MyCHIPs wallet's core: connection tickets and keys, the Wyseman connection, the
        // user's record and language data, and the view models of its first pages.
        // MyCHIPs records both ends read and write: tallies and chits as they are signed and
        // hashed, the chit chain, signatures by signing key, the balance sheet and its chart.
        .target(
            name: "ChipsProtocol",
            dependencies: [
                "PurseFormats",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "MyCHIPs",
            dependencies: [
                "ChipsProtocol",
                "PurseKit",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "PurseFormats",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Shared server plumbing

        // The database seam: `Database`, the driver and session protocols, `SQLStatement`, migrations.
        .target(
            name: "PurseDatabase",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            swiftSettings: serverSwiftSettings
        ),
        // The SQLite engine behind the seam: writer, readers, WAL policy, and its hooks into SQLite.
        .target(
            name: "PurseSQLite",
            dependencies: [
                "PurseDatabase",
                "CPurseSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics", condition: .server),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOPosix", package: "swift-nio", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "SQLiteKit", package: "sqlite-kit", condition: .server),
                .product(name: "SQLiteNIO", package: "sqlite-nio", condition: .server),
            ],
            exclude: ["CPurseSQLite"],
            swiftSettings: serverSwiftSettings
        ),
        // sqlite3_config is variadic, which Swift cannot call: C functions that call it, and the
        // allocator SQLite is given through it.
        .target(
            name: "CPurseSQLite",
            dependencies: [
                .product(name: "SQLiteNIO", package: "sqlite-nio", condition: .server),
            ],
            path: "Sources/PurseSQLite/CPurseSQLite"
        ),
        .target(
            name: "PurseServer",
            dependencies: [
                "PurseFormats",
                "PurseDatabase",
                "PurseSQLite",
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth", condition: .server),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth", condition: .server),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit", condition: .server),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics", condition: .server),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "PostgresKit", package: "postgres-kit", condition: .server),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOPosix", package: "swift-nio", condition: .server),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .server),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .server),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras", condition: .server),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras", condition: .server),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: .server),
                .product(name: "WSCore", package: "swift-websocket", condition: .server),
            ],
            swiftSettings: serverSwiftSettings
        ),

        // MARK: - Services

        .target(
            name: "NexusService",
            dependencies: [
                "NexusVocabulary",
                "PurseServer",
                "PurseHTTP",
                "PurseHTTPNIO",
                "PurseDatabase",
                "PurseFormats",
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            swiftSettings: serverSwiftSettings
        ),

        // A Starknet devnet in the server's process (STRK, the vault, funded accounts, JSON-RPC,
        // a faucet), which ChippiPayService mounts in development.
        .target(
            name: "StarknetDevnet",
            dependencies: [
                "PurseServer",
                "PurseDatabase",
                "PurseFormats",
                "PurseHTTP",
                "Starknet",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: serverSwiftSettings
        ),
        .target(
            name: "ChippiPayService",
            dependencies: [
                "ChippiPayVocabulary",
                "StarknetDevnet",
                "PurseServer",
                "PurseDatabase",
                "PurseFormats",
                "PurseHTTP",
                "PurseHTTPNIO",
                "Starknet",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: serverSwiftSettings
        ),
        // APNs for every service that pushes: the provider API client (token auth, HTTP/2), the
        // APNS_* settings, and the APNs-compatible sandbox a service mounts in development.
        .target(
            name: "PurseAPNs",
            dependencies: [
                "PurseServer",
                "PurseDatabase",
                "PurseFormats",
                "PurseHTTP",
                "PurseHTTPNIO",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .server),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            swiftSettings: serverSwiftSettings
        ),
        .target(
            name: "CutiEService",
            dependencies: [
                "CutiEVocabulary",
                "PurseAPNs",
                "PurseServer",
                "PurseDatabase",
                "PurseFormats",
                "PurseHTTP",
                "PurseHTTPNIO",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .server),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: serverSwiftSettings
        ),
        // The MyCHIPs provider: the Wyseman websocket API, logins by ticket and by connection key,
        // users and their certificates, language data.
        .target(
            name: "ChipsService",
            dependencies: [
                "ChipsProtocol",
                "PurseP521",
                "PurseAPNs",
                "PurseHTTP",
                "PurseServer",
                "PurseDatabase",
                "PurseFormats",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "WSCore", package: "swift-websocket", condition: .server),
            ],
            swiftSettings: serverSwiftSettings
        ),
        .target(
            name: "ConnectService",
            dependencies: [
                "PurseServer",
                "PurseDatabase",
                "PurseFormats",
                "PurseHTTP",
                "PurseHTTPNIO",
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            swiftSettings: serverSwiftSettings
        ),

        // MARK: - Benchmarks

        // The load generators and phases behind `purse bench …`, one benchmark per system.
        .target(
            name: "PurseBench",
            dependencies: [
                "PurseFormats",
                "PurseKit",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras", condition: .server),
                "PurseHTTPNIO",
                "NexusPay",
                "Starknet",
                "ChippiPay",
                "CutiE",
                "MyCHIPs",
                "PurseP521",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .server),
                .product(name: "NIOPosix", package: "swift-nio", condition: .server),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Executable

        .target(
            name: "PurseCLI",
            dependencies: [
                "PurseBench",
                "PurseFormats",
                "PurseKit",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "PurseHTTPNIO",
                "PurseServer",
                "NexusPay",
                "NexusService",
                "StripeConnect",
                "ConnectService",
                "Starknet",
                "ChippiPay",
                "ChippiPayService",
                "CutiE",
                "CutiEService",
                "ChipsService",
                "MyCHIPs",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .server),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .server),
                .product(name: "NIOPosix", package: "swift-nio", condition: .server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "purse",
            dependencies: [
                "PurseCLI",
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests

        .target(
            name: "PurseTestSupport",
            dependencies: [
                "PurseServer",
                "PurseDatabase",
                "PurseSQLite",
                "PurseKit",
                "PurseHTTP",
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .server),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .server),
                .product(name: "NIOPosix", package: "swift-nio", condition: .server),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
            ],
            path: "Tests/PurseTestSupport",
            swiftSettings: swiftSettings
        ),

        .testTarget(
            name: "PurseFormatsTests",
            dependencies: ["PurseFormats"],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PurseDatabaseTests",
            dependencies: [
                "PurseDatabase",
                "PurseFormats",
                "PurseServer",
                "PurseTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PurseAPNsTests",
            dependencies: [
                "PurseAPNs",
                "PurseFormats",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "PurseServer",
                "PurseTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PurseSQLiteTests",
            dependencies: [
                "PurseSQLite",
                "PurseDatabase",
                "PurseTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "SQLiteNIO", package: "sqlite-nio", condition: .server),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PurseKitTests",
            dependencies: ["PurseKit", "PurseHTTP", .product(name: "HTTPTypes", package: "swift-http-types")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PurseServerTests",
            dependencies: [
                "PurseServer",
                "PurseDatabase",
                "PurseFormats",
                "PurseSQLite",
                "PurseKit",
                "PurseHTTP",
                "PurseHTTPNIO",
                "PurseTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit", condition: .server),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NexusTests",
            dependencies: [
                "PurseDatabase",
                "PurseFormats",
                "NexusPay",
                "NexusVocabulary",
                "NexusService",
                "PurseServer",
                "PurseKit",
                "PurseHTTP",
                "PurseHTTPNIO",
                "PurseTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StarknetTests",
            dependencies: [
                "Starknet",
                "PurseFormats",
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChippiPayTests",
            dependencies: [
                "ChippiPayVocabulary",
                "PurseCLI",
                "StarknetDevnet",
                "Starknet",
                "ChippiPay",
                "PurseFormats",
                "PurseKit",
                "PurseHTTP",
                "PurseServer",
                "PurseDatabase",
                "ChippiPayService",
                "PurseTestSupport",
                .product(name: "JWTKit", package: "jwt-kit", condition: .server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ConnectTests",
            dependencies: [
                "PurseDatabase",
                "StripeConnect",
                "ConnectService",
                "PurseServer",
                "PurseKit",
                "PurseHTTP",
                "PurseHTTPNIO",
                "PurseTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CutiETests",
            dependencies: [
                "PurseAPNs",
                "CutiE",
                "CutiEService",
                "PurseHTTPNIO",
                .product(name: "NIOPosix", package: "swift-nio", condition: .server),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .server),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                "PurseDatabase",
                "PurseFormats",
                "PurseKit",
                "PurseHTTP",
                "PurseServer",
                "PurseTestSupport",
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: .server),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOFoundationCompat", package: "swift-nio", condition: .server),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PurseP521Tests",
            dependencies: ["PurseP521", "PurseFormats", .product(name: "Crypto", package: "swift-crypto")],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChipsProtocolTests",
            dependencies: [
                "ChipsProtocol",
                // The record vectors for the Python oracle are signed with the wallet's keys.
                "MyCHIPs",
                "PurseFormats",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChipsTests",
            dependencies: [
                "PurseAPNs",
                "ChipsProtocol",
                "MyCHIPs",
                "ChipsService",
                "PurseDatabase",
                "PurseFormats",
                "PurseKit",
                "PurseHTTP",
                "PurseHTTPNIO",
                "PurseServer",
                "PurseTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .server),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "NIOPosix", package: "swift-nio", condition: .server),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .server),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .server),
                .product(name: "SQLKit", package: "sql-kit", condition: .server),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PurseBenchTests",
            dependencies: [
                "PurseBench",
                "PurseKit",
                "PurseHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                "NexusPay",
                "NexusService",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PurseCLITests",
            dependencies: [
                "PurseFormats",
                "PurseCLI",
                "PurseHTTP",
                "PurseServer",
                "PurseTestSupport",
                "NexusPay",
                "NexusService",
                "ChippiPayService",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio", condition: .server),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .server),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
