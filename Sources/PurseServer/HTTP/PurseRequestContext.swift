import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PurseDatabase

/// The identity a valid session token carries.
public struct AuthenticatedUser: Sendable, Hashable {
    public var id: UserID
    public init(id: UserID) { self.id = id }
}

/// The request context of every Purse route: the core context, the request id and,
/// after ``SessionAuthenticator``, the signed-in user.
public struct PurseRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The user of a valid bearer token, if the request carried one and the user exists.
    public var user: AuthenticatedUser?
    /// The user a valid bearer token names when this database has no such user (``user`` is
    /// then nil): routes whose contract answers that case in its own words read it.
    public var unknownUser: UserID?
    /// Taken from `X-Request-ID` when the caller sent a sane one, otherwise generated.
    public var requestID: String = ""

    /// The connection the request came on, for the peer's address; nil for a request made in
    /// this process (``InProcessTransport``).
    private let channel: (any Channel)?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }

    /// A request from this process to one of its own sandboxes.
    init(inProcess logger: Logger) {
        self.coreContext = .init(source: InProcessSource(logger: logger))
        self.channel = nil
    }

    struct InProcessSource: RequestContextSource {
        let logger: Logger
    }

    /// The peer's address (the proxy's, behind one); nil for a request made in this process.
    public var remoteAddress: SocketAddress? { channel?.remoteAddress }

    /// Request bodies above 1 MiB are refused with 413.
    public var maxUploadSize: Int { PurseRequestContext.maxBodySize }
    public static let maxBodySize = 1 << 20

    /// The signed-in user, or a 401 `{"error": "Authentication required"}`.
    public func requireUser() throws -> AuthenticatedUser {
        guard let user else { throw APIError.authenticationRequired }
        return user
    }
}
