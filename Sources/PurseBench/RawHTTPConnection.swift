import PurseFormats
import Crypto
import Foundation
import NIOCore
import NIOPosix
import NexusPay
import PurseHTTP
import Synchronization

/// A response read by ``RawResponseParser``.
struct RawHTTPResponse: Sendable {
    var status: Int
    var body: ByteBuffer

    func requireStatus(_ expected: Int) throws {
        guard status == expected else {
            throw PurseError.invalidResponse("HTTP \(status): \(String(buffer: body).prefix(200))")
        }
    }

    /// The value of the first `"name":"value"` pair in the body, as the server writes it (compact
    /// JSON); nil when it is not there or holds an escape. Enough for base64url and JWT values.
    func stringValue(of name: String) -> String? {
        body.withUnsafeReadableBytes { bytes in
            guard let found = ByteSearch.firstIndex(of: Array(#""\#(name)":""#.utf8), in: bytes) else { return nil }
            let start = found.upperBound
            guard let end = bytes[start...].firstIndex(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }),
                  bytes[end] == UInt8(ascii: "\"") else { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }
}

/// A plain forward search for a short byte pattern (`Collection.firstRange(of:)` on a buffer's
/// bytes goes through unspecialised generic code and cost a quarter of the load generator's CPU).
enum ByteSearch {
    static func firstIndex(of pattern: [UInt8], in bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        guard let first = pattern.first, bytes.count >= pattern.count else { return nil }
        var index = 0
        let last = bytes.count - pattern.count
        while index <= last {
            if bytes[index] == first {
                var matched = 1
                while matched < pattern.count, bytes[index + matched] == pattern[matched] { matched += 1 }
                if matched == pattern.count { return index..<(index + pattern.count) }
            }
            index += 1
        }
        return nil
    }
}

/// One keep-alive connection, one request at a time: prepared request bytes out, status and
/// body back. A new connection replaces one the server has ended.
struct RawHTTPConnection: Sendable {
    private let link: ReconnectingBenchChannel<RawResponseParser>

    static func connect(host: String, port: Int) async throws -> RawHTTPConnection {
        RawHTTPConnection(link: try await ReconnectingBenchChannel.connect(host: host, port: port) { pipeline in
            let parser = RawResponseParser()
            try pipeline.addHandler(parser)
            return parser
        })
    }

    func send(_ request: ByteBuffer) async throws -> RawHTTPResponse {
        try await link.send { channel in channel.writeAndFlush(request, promise: nil) }
    }

    func close() async {
        await link.close()
    }
}

/// Reads HTTP/1.1 responses framed by `Content-Length` (what the server sends for every JSON
/// response) and answers the pending request with each.
final class RawResponseParser: PendingResponseHandler {
    typealias InboundIn = ByteBuffer

    var pending: EventLoopPromise<RawHTTPResponse>?
    private var buffer = ByteBuffer()
    private static let headEnd = Array("\r\n\r\n".utf8)
    private static let contentLength = Array("content-length:".utf8)
    private static let connectionClose = Array("connection: close".utf8)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        buffer.writeBuffer(&chunk)
        do {
            while let (response, last) = try Self.parse(&buffer) {
                succeedPending(response)
                // The server's last response on this connection: close it, so that the next
                // request goes on a new one instead of racing the server's close.
                if last { context.close(promise: nil) }
            }
        } catch {
            failPending(error)
            context.close(promise: nil)
        }
    }

    /// Takes one complete response off the front of `buffer`, and whether the server closes the
    /// connection after it (`Connection: close`); nil when more bytes are needed.
    static func parse(_ buffer: inout ByteBuffer) throws -> (RawHTTPResponse, closes: Bool)? {
        let framing = try buffer.withUnsafeReadableBytes { bytes -> (status: Int, headLength: Int, length: Int, closes: Bool)? in
            guard let end = ByteSearch.firstIndex(of: headEnd, in: bytes) else { return nil }
            let head = UnsafeRawBufferPointer(rebasing: bytes[..<end.lowerBound])
            // "HTTP/1.1 200 OK"
            guard head.count >= 12, head.starts(with: "HTTP/1.".utf8) else { throw PurseError.invalidResponse("not an HTTP/1.x response") }
            var status = 0
            for byte in head[9..<12] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { throw PurseError.invalidResponse("bad status line") }
                status = status * 10 + Int(byte - UInt8(ascii: "0"))
            }
            // Every response this server sends has a length; chunked bodies are not expected here.
            let (length, closes) = headers(in: head)
            guard let length else { throw PurseError.invalidResponse("response without Content-Length") }
            return (status, end.upperBound, length, closes)
        }
        guard let framing, buffer.readableBytes >= framing.headLength + framing.length else { return nil }
        buffer.moveReaderIndex(forwardBy: framing.headLength)
        let body = buffer.readSlice(length: framing.length)!
        if buffer.readableBytes == 0 { buffer.clear() }
        return (RawHTTPResponse(status: framing.status, body: body), framing.closes)
    }

    /// The value of the `Content-Length` header, and whether a `Connection: close` header is there
    /// (names and the value in any case), in a response head.
    static func headers(in head: UnsafeRawBufferPointer) -> (contentLength: Int?, closes: Bool) {
        var length: Int?
        var closes = false
        var lineStart = 0
        while lineStart < head.count {
            var lineEnd = lineStart
            while lineEnd < head.count, head[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            if lineEnd - lineStart > contentLength.count,
               (0..<contentLength.count).allSatisfy({ head[lineStart + $0] | 0x20 == contentLength[$0] }) {
                var value = 0, digits = 0
                for byte in head[(lineStart + contentLength.count)..<lineEnd] where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\r") {
                    guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), digits < 12 else { return (nil, closes) }
                    value = value * 10 + Int(byte - UInt8(ascii: "0"))
                    digits += 1
                }
                length = digits > 0 ? value : nil
            } else if lineEnd - lineStart >= connectionClose.count,
                      (0..<connectionClose.count).allSatisfy({ head[lineStart + $0] | 0x20 == connectionClose[$0] }) {
                closes = true
            }
            lineStart = lineEnd + 1
        }
        return (length, closes)
    }
}
