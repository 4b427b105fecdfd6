import PostgresNIO

/// Whether an error means the database cannot be reached right now — PostgreSQL restarting, a
/// connection lost mid-statement, the server refusing connections while it recovers — rather than
/// anything about the request. Such a request is answered `503` with `Retry-After`: nothing it
/// asked for was half-done (its transaction rolled back or never began), and a retry with its
/// `Idempotency-Key` gets the first answer if the commit did land.
public enum DatabaseOutage {
    public static func contains(_ error: any Error) -> Bool {
        if error is DatabaseConnectionLost || error is DatabaseLeaseTimeout { return true }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection, .poolClosed:
            return true
        case .server:
            // SQLSTATE class 08 (connection exception) and 57P (operator intervention: the server
            // shutting down, crashed, or not yet accepting connections).
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P")
        default:
            return false
        }
    }
}

/// The database connection a session was using closed before its work finished.
public struct DatabaseConnectionLost: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the database connection closed before the work on it finished" }
}

/// No database connection came within the lease bound (PostgreSQL down or every connection busy):
/// the request is answered 503 at once rather than waiting for the database to come back.
public struct DatabaseLeaseTimeout: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "no database connection within the lease bound" }
}
