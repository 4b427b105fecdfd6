import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Bytes on a plain TCP connection to a test server, for requests no HTTP client would send:
/// malformed request lines and headers, conflicting framing, slow senders.
public enum RawConnection {
    /// What the server wrote, and whether it closed the connection itself (before `timeout`).
    public struct Exchange: Sendable {
        public var received: String
        public var closedByServer: Bool
        /// The status code of the first response, if one came.
        public var status: Int? {
            guard received.hasPrefix("HTTP/1."), received.utf8.count >= 12 else { return nil }
            return Int(received.dropFirst(9).prefix(3))
        }
    }

    /// Connects to 127.0.0.1:`port`, sends `chunks` with `pause` between them, and reads until the
    /// server closes the connection or `timeout` has passed since connecting.
    public static func exchange(port: Int, _ chunks: [[UInt8]], pause: Duration = .zero, timeout: Duration = .seconds(5)) async throws -> Exchange {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        let timedOut = Atomic<Bool>(false)
        let raw = channel.channel
        let timer = Task {
            try? await Task.sleep(for: timeout)
            timedOut.store(true, ordering: .sequentiallyConsistent)
            try? await raw.close()
        }
        defer { timer.cancel() }
        var received = ByteBuffer()
        do {
            try await channel.executeThenClose { inbound, outbound in
                let writer = Task {
                    for (index, chunk) in chunks.enumerated() {
                        if index > 0, pause > .zero { try await Task.sleep(for: pause) }
                        try await outbound.write(ByteBuffer(bytes: chunk))
                    }
                }
                defer { writer.cancel() }
                for try await part in inbound { received.writeImmutableBuffer(part) }
            }
        } catch {
            // A reset or a write after the server closed: what came before it is the answer.
        }
        return Exchange(received: String(buffer: received), closedByServer: !timedOut.load(ordering: .sequentiallyConsistent))
    }

    /// `exchange` for one piece of text.
    public static func exchange(port: Int, _ text: String, timeout: Duration = .seconds(5)) async throws -> Exchange {
        try await exchange(port: port, [Array(text.utf8)], timeout: timeout)
    }
}
