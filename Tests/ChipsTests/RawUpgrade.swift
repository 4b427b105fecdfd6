import Foundation
import HTTPTypes
import NIOCore
import NIOPosix

/// A websocket upgrade request on a connection of its own, read back as status and body — what a
/// `ws` client sees when the provider refuses a login.
enum RawUpgrade {
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var body: String
    }

    static func send(port: Int, target: String, userAgent: String? = nil) async throws -> Answer {
        var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        if let userAgent { request += "User-Agent: \(userAgent)\r\n" }
        request += "\r\n"
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request))
            var received = ""
            for try await chunk in inbound {
                received += String(buffer: chunk)
                // A refusal closes the connection; a 101 keeps it open, so stop at its head.
                if received.hasPrefix("HTTP/1.1 101"), received.contains("\r\n\r\n") { break }
            }
            let head = received.components(separatedBy: "\r\n").first ?? ""
            let parts = head.split(separator: " ")
            guard parts.count >= 2, let code = Int(parts[1]) else { throw CancellationError() }
            let body = received.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
            return Answer(status: HTTPResponse.Status(code: code), body: body)
        }
    }
}
