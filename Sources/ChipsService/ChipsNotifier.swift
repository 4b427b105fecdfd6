import Foundation
import Logging
import PurseDatabase
import PurseFormats
import PurseServer
import ServiceLifecycle
import SQLKit
import Synchronization

/// Pushes to users' websocket connections, on the user's channel (`mu_<entity id>` as in
/// MyCHIPs). On SQLite the server is alone and delivers to its own connections; on PostgreSQL
/// every notice goes through `NOTIFY` on one channel that every replica `LISTEN`s to, so a user
/// connected to another replica gets it too (including the sender's own, which is how local
/// connections get it: one path, no duplicates).
final class ChipsNotifier: Sendable {
    struct Notice: Sendable {
        var username: String
        var channel: String
        var data: JSONValue
        /// Also pushed to the user's devices (the partner's notice); a user's notice of their
        /// own change goes only to their connections.
        var push = true
    }

    static let databaseChannel = "purse_chips"

    private let database: Database
    private let logger: Logger
    private let subscribers = Mutex<[String: [UUID: AsyncStream<Notice>.Continuation]]>([:])

    init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The channel of a user's notices.
    static func channel(ofEntity entity: String) -> String { "mu_" + entity }

    /// Notices for `username` until the returned stream's consumer stops.
    func subscribe(_ username: String) -> (id: UUID, stream: AsyncStream<Notice>) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Notice>.makeStream(bufferingPolicy: .bufferingNewest(256))
        subscribers.withLock { $0[username, default: [:]][id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(username, id) }
        return (id, stream)
    }

    func unsubscribe(_ username: String, _ id: UUID) {
        let continuation = subscribers.withLock { all -> AsyncStream<Notice>.Continuation? in
            let removed = all[username]?.removeValue(forKey: id)
            if all[username]?.isEmpty == true { all[username] = nil }
            return removed
        }
        continuation?.finish()
    }

    /// Sends a notice; on PostgreSQL inside `db`'s transaction, so it goes out only if it commits.
    /// On SQLite call ``deliverAfterCommit(_:)`` once the transaction has committed instead.
    func publish(_ notice: Notice, in db: any DatabaseSession) async throws {
        guard database.driver.deliversNotifications else { return }
        let payload = JavaScriptJSON.object([("user", .string(notice.username)), ("channel", .string(notice.channel)), ("data", notice.data)])
        try await db.raw("SELECT pg_notify(\(bind: Self.databaseChannel), \(bind: payload))").run()
    }

    /// Delivers to this server's connections where the database does not (SQLite).
    func deliverAfterCommit(_ notice: Notice) {
        guard !database.driver.deliversNotifications else { return }
        deliver(notice)
    }

    func deliver(_ notice: Notice) {
        let targets = subscribers.withLock { Array(($0[notice.username] ?? [:]).values) }
        for continuation in targets { continuation.yield(notice) }
    }

    /// Receives the database's notices and hands them to local connections (PostgreSQL only).
    var listener: (any Service)? {
        guard database.driver.deliversNotifications else { return nil }
        return NotificationListener(notifier: self, database: database, logger: logger)
    }

    private struct NotificationListener: Service {
        let notifier: ChipsNotifier
        let database: Database
        let logger: Logger

        func run() async throws {
            while !Task.isCancelled {
                do {
                    try await cancelWhenGracefulShutdown {
                        try await database.driver.listen(channel: ChipsNotifier.databaseChannel) { payload in
                            guard let value = try? StrictJSON.parse(payload.utf8),
                                  case .string(let user)? = value["user"], case .string(let channel)? = value["channel"] else { return }
                            notifier.deliver(Notice(username: user, channel: channel, data: value["data"] ?? .null))
                        }
                    }
                } catch is CancellationError {
                    return
                } catch {
                    if Task.isCancelled || Task.isShuttingDownGracefully { return }
                    logger.warning("MyCHIPs notification listener failed; listening again", metadata: ["error.type": "\(type(of: error))"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }
}
