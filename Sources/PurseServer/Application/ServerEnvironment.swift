import Foundation
import HTTPTypes
import Logging
import PurseDatabase

/// What every module's routes share: configuration, storage, the ledger, tokens, the job queue.
public struct ServerEnvironment: Sendable {
    public let configuration: PurseConfiguration
    public let database: Database
    public let accounts: AccountStore
    public let ledger: Ledger
    public let idempotency: IdempotencyStore
    public let jobs: JobQueue
    public let tokens: TokenService
    public let passwords: PasswordHasher
    public let metrics: RequestMetrics
    public let logger: Logger
    /// Websocket endpoints by path; the server upgrades requests for these.
    public let webSockets: WebSocketEndpoints
    /// The clock every module reads. Tests replace it.
    public let now: @Sendable () -> Date
    /// Seals secrets kept in the database (``SecretSealer``).
    public let sealer: SecretSealer

    public init(
        configuration: PurseConfiguration, database: Database, tokens: TokenService, metrics: RequestMetrics,
        logger: Logger, sealer: SecretSealer, now: @escaping @Sendable () -> Date
    ) {
        self.sealer = sealer
        self.configuration = configuration
        self.database = database
        self.accounts = AccountStore(database: database)
        self.ledger = Ledger()
        self.idempotency = IdempotencyStore()
        self.jobs = JobQueue(database: database, lease: configuration.jobLease)
        self.tokens = tokens
        self.passwords = PasswordHasher(cost: configuration.bcryptCost)
        self.metrics = metrics
        self.logger = logger
        self.webSockets = WebSocketEndpoints()
        self.now = now
    }
}
