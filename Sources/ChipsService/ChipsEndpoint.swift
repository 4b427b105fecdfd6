import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOWebSocket
import PurseDatabase
import PurseFormats
import PurseServer
import WSCore
@_spi(WSInternal) import WSCore

/// The websocket on `/`, as the real provider's: the login is in the upgrade's query, decided
/// before the upgrade (`verifyClient` of Node's `ws`), and refused with the real statuses —
/// 401 `No login credentials`, 400 `Invalid Date Stamp`, 403 `Invalid Login`.
struct ChipsEndpoint: WebSocketEndpoint {
    let database: Database
    let configuration: ChipsConfiguration
    let tickets: ChipsTickets
    let notifier: ChipsNotifier
    let dispatcher: WysemanDispatcher
    let now: @Sendable () -> Date
    let logger: Logger
    var pushes: ChipsPushes? = nil
    /// Invoice requests per user: each one notifies a partner and pushes to their devices, so a
    /// user asks at most 10 at once, then one a minute.
    var invoiceRequests: SharedRateLimiter? = nil
    /// Requests one connection may have in flight; more wait for one to finish.
    var maxInFlight = 16

    func decide(_ request: WebSocketUpgradeRequest) async -> WebSocketUpgradeDecision {
        let query = request.query
        guard let user = query["user"], !user.isEmpty else { return .refuse(status: .unauthorized, message: "No login credentials") }
        do {
            let record: ChipsUserRecord
            if let token = query["token"], let pub = query["pub"] {
                guard let user = try await tickets.ticketLogin(username: user, token: token, pub: pub) else {
                    logger.notice("MyCHIPs ticket login refused", metadata: ["user": "\(user)"])
                    return .refuse(status: .forbidden, message: "Invalid Login")
                }
                record = user
            } else if let sign = query["sign"], let date = query["date"] {
                let message = ChipsTickets.loginMessage(ip: request.remoteIP, cookie: request.headerFields[.cookie],
                                                        userAgent: request.headerFields[.userAgent], date: date)
                switch try await tickets.signatureLogin(username: user, sign: sign, date: date, message: message) {
                case .valid(let user): record = user
                case .staleDate: return .refuse(status: .badRequest, message: "Invalid Date Stamp")
                case .invalid:
                    logger.notice("MyCHIPs signature login refused", metadata: ["user": "\(user)"])
                    return .refuse(status: .forbidden, message: "Invalid Login")
                }
            } else {
                return .refuse(status: .unauthorized, message: "No login credentials")
            }
            let context = ViewContext(user: record, database: database, now: now, configuration: configuration, notifier: notifier, tickets: tickets,
                                      pushes: pushes, invoiceRequests: invoiceRequests)
            let channel = Self.listenedChannel(query["db"], user: record)
            // The app counts as connected (its notices are not pushed) from before it sees the
            // upgrade — when it listens for them.
            let connection = UUID().uuidString
            if pushes != nil, channel != nil { await ChipsPresence(database: database, now: now).seen(connection, username: record.username) }
            return .accept { inbound, outbound, logger in
                await serve(context: context, connection: connection, channel: channel, inbound: inbound, outbound: outbound, logger: logger)
            }
        } catch {
            logger.error("MyCHIPs login could not be checked", metadata: ["error.type": "\(type(of: error))"])
            return .refuse(status: .serviceUnavailable, message: "Service Unavailable")
        }
    }

    /// The user's notice channel a login's `db` parameter names (base64url JSON of channel names,
    /// as Wyseman's client sends it), under the name the login used: `mu_<user>` or
    /// `mu_<entity id>`. Nil when it names none of the user's own: a real provider then sends the
    /// connection no notices, and other users' channels are never heard.
    static func listenedChannel(_ db: String?, user: ChipsUserRecord) -> String? {
        guard let db, db.utf8.count <= 4096, let data = Base64URL.decode(db), let value = try? StrictJSON.parse(Array(data)),
              case .array(let names) = value else { return nil }
        let own: Set<String> = ["mu_" + user.username, "mu_" + user.userEnt]
        return names.lazy.compactMap(\.stringValue).first(where: own.contains)
    }

    /// One connection: a reader that answers requests (several at once, answers in whatever order
    /// they finish) and a writer of the user's notices, on the channel the login listens to.
    func serve(context: ViewContext, connection: String, channel: String?, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
               logger: Logger) async {
        let username = context.user.username
        let subscription = notifier.subscribe(username)
        logger.debug("MyCHIPs connection", metadata: ["user": "\(username)"])
        // While the app is connected its notices come on this socket, not as pushes.
        let presence = ChipsPresence(database: database, now: now)
        let heartbeat: Task<Void, Never>? = pushes == nil || channel == nil ? nil : Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(max(5, configuration.presenceWindow / 2)))
                if Task.isCancelled { break }
                await presence.seen(connection, username: username)
            }
        }
        defer { heartbeat?.cancel() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await notice in subscription.stream {
                    guard let channel else { continue }
                    try? await outbound.write(Self.text(WysemanResponse.notify(channel: channel, data: notice.data)))
                }
            }
            var inFlight = 0
            // The frames are read here, on the connection's own task: a message is assembled and
            // handed to its request's task without a reader task and a stream between them.
            var message = MessageAssembler(limit: configuration.maxMessageBytes)
            do {
                for try await frame in inbound {
                    switch message.add(frame) {
                    case .incomplete:
                        continue
                    case .refused(let refusal):
                        try? await outbound.write(Self.text(WysemanResponse.error(refusal, id: .null)))
                    case .complete(let message):
                        if inFlight >= maxInFlight {
                            await group.next()
                            inFlight -= 1
                        }
                        inFlight += 1
                        group.addTask {
                            let response = await dispatcher.respond(to: message, context: context)
                            try? await outbound.write(Self.text(response))
                        }
                    }
                }
            } catch {
                logger.debug("MyCHIPs connection ended", metadata: ["error.type": "\(type(of: error))"])
            }
            notifier.unsubscribe(username, subscription.id)
            heartbeat?.cancel()
            if heartbeat != nil { await presence.gone(connection) }
            // The notice writer ends with its stream; requests still running finish and write
            // into a closed connection, which drops what they write.
        }
    }

    /// A text frame of UTF-8 the answer was rendered into, sent without a `String` between.
    static func text(_ bytes: [UInt8]) -> WebSocketOutboundWriter.OutboundFrame {
        .custom(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: bytes)))
    }

    /// Assembles a connection's text messages from their frames. A message larger than
    /// ``ChipsConfiguration/maxMessageBytes``, or a binary one, is refused with an error frame and
    /// skipped; the connection goes on.
    struct MessageAssembler {
        enum Outcome {
            case incomplete
            /// The message's bytes, parsed as JSON (which refuses text that is not UTF-8).
            case complete([UInt8])
            case refused(WysemanError)
        }

        let limit: Int
        private var buffer = ByteBuffer()
        private var skipping: String?
        private var isText = true

        init(limit: Int) { self.limit = limit }

        mutating func add(_ frame: WebSocketDataFrame) -> Outcome {
            if frame.opcode != .continuation {
                buffer.clear()
                skipping = nil
                isText = frame.opcode == .text
                if !isText { skipping = "binary frames are not part of the protocol: send JSON text" }
            }
            if skipping == nil {
                if buffer.readableBytes + frame.data.readableBytes > limit {
                    skipping = "request larger than \(limit) bytes"
                    buffer.clear()
                } else {
                    var data = frame.data
                    buffer.writeBuffer(&data)
                }
            }
            guard frame.fin else { return .incomplete }
            defer { buffer.clear() }
            if let reason = skipping { return .refused(.request(reason, isText ? "tooLarge" : "badFrame")) }
            return .complete(buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? [])
        }
    }
}
