import HTTPTypes
import Foundation
import Hummingbird
import NIOCore
import PurseDatabase
import PurseFormats

extension Request {
    /// Collects a JSON body: at most ``PurseRequestContext/maxUploadSize`` bytes (else 413), and
    /// a body that is not empty must say `Content-Type: application/json` (or a `+json` type),
    /// else 415 — a form or text body is not read as JSON by accident.
    public mutating func collectJSONBody(context: PurseRequestContext) async throws -> ByteBuffer {
        let buffer = try await collectLimitedBody(context: context)
        if buffer.readableBytes > 0, !Self.isJSON(headers[.contentType]) {
            throw APIError(.unsupportedMediaType, "Content-Type must be application/json")
        }
        return buffer
    }

    /// Collects the body, whatever its type, at most ``PurseRequestContext/maxUploadSize`` bytes
    /// (else 413); a body holding a NUL character is 400 (``NULRefusal``).
    public mutating func collectLimitedBody(context: PurseRequestContext) async throws -> ByteBuffer {
        let buffer: ByteBuffer
        do {
            buffer = try await self.collectBody(upTo: context.maxUploadSize)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw APIError(.contentTooLarge, "Request body is larger than \(context.maxUploadSize) bytes")
        }
        try NULRefusal.check(body: buffer, contentType: headers[.contentType])
        return buffer
    }

    /// `application/json` or `application/…+json`, any parameters (`; charset=utf-8`).
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }

    /// Decodes the JSON body as `T`, turning every decoding failure into a 400 that names the field.
    public mutating func decodeJSON<T: Decodable>(as type: T.Type, context: PurseRequestContext) async throws -> T {
        let buffer = try await collectJSONBody(context: context)
        return try JSONBody.decode(T.self, from: buffer)
    }
}

/// JSON decoding with client-facing error messages.
public enum JSONBody {
    public static func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        guard buffer.readableBytes > 0 else {
            throw APIError.badRequest("Request body must be a JSON object")
        }
        let flat = buffer.withUnsafeReadableBytes { FlatJSONDecoder().decodeFlat(T.self, from: $0) }
        return try finish(flat, type, data: Data(buffer.readableBytesView))
    }

    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let flat = data.withUnsafeBytes { FlatJSONDecoder().decodeFlat(T.self, from: $0) }
        return try finish(flat, type, data: data)
    }

    private static func finish<T: Decodable>(_ flat: FlatDecoding<T>, _ type: T.Type, data: @autoclosure () -> Data) throws -> T {
        switch flat {
        case .decoded(let value): return value
        case .refused(let message): throw APIError.badRequest(message)
        case .handBack: return try decodeWithFoundation(type, from: data())
        }
    }

    /// Foundation's decoder, for what the flat decoder hands back — after ``StrictJSON`` (the flat
    /// decoder is strict itself; Foundation forgives trailing commas and repeated keys).
    private static func decodeWithFoundation<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        do {
            try StrictJSON.validate(data)
        } catch {
            throw APIError.badRequest("Malformed JSON body: \(error)")
        }
        do {
            return try JSONCoding.decoder.decode(T.self, from: data)
        } catch let error as DecodingError {
            throw APIError.badRequest(message(for: error))
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.badRequest("Malformed JSON body")
        }
    }

    /// A human sentence naming the offending field.
    static func message(for error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            var keys = codingPath
            if let last { keys.append(last) }
            let parts = keys.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
            return parts.reduce("") { acc, part in
                part.hasPrefix("[") || acc.isEmpty ? acc + part : acc + "." + part
            }
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "Missing required field '\(path(context.codingPath, key))'"
        case .valueNotFound(let type, let context):
            return "Field '\(path(context.codingPath))' must not be null (expected \(typeName(type)))"
        case .typeMismatch(let type, let context):
            if context.codingPath.isEmpty { return "Request body must be a JSON object" }
            return "Field '\(path(context.codingPath))' has the wrong type (expected \(typeName(type)))"
        case .dataCorrupted(let context):
            if let unknown = context.underlyingError as? UnknownChoice { return unknown.description }
            if context.codingPath.isEmpty { return "Malformed JSON body" }
            return "Field '\(path(context.codingPath))' is invalid: \(context.debugDescription)"
        @unknown default:
            return "Malformed JSON body"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type: "an integer"
        case is Double.Type, is Float.Type, is Decimal.Type: "a number"
        default:
            String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

extension Response {
    /// A JSON response with sorted keys (stable for tests and caches).
    public static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        let data = try JSONCoding.encoder.encode(value)
        return .jsonData(data, status: status, headers: headers)
    }

    public static func jsonData(_ data: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    public static func html(_ html: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/html; charset=utf-8", .contentSecurityPolicy: "default-src 'self' 'unsafe-inline'"],
            body: .init(byteBuffer: ByteBuffer(string: html))
        )
    }
}

/// The server's JSON coders.
public enum JSONCoding {
    /// One encoder shared by every response: its settings never change after this, and
    /// encoding with it from several tasks at once is safe. (A new one per response cost an
    /// allocation and its options' setup on every request.)
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    /// One decoder shared by every request body, for the same reason. ``JSONBody`` tries
    /// ``FlatJSONDecoder`` first, which gives the same answers for the flat objects most bodies are.
    public static let decoder = JSONDecoder()
}

extension Request {
    /// Refuses (400) a query with a parameter the route does not take: a misspelt filter must not
    /// silently widen a listing.
    public func requireOnlyQuery(_ allowed: Set<String>) throws {
        for parameter in uri.queryParameters where !allowed.contains(String(parameter.key)) {
            throw APIError.badRequest("Unknown query parameter \(String(parameter.key).prefix(64)); this route takes \(allowed.sorted().joined(separator: ", "))")
        }
    }
}

extension WireChoice {
    /// A query parameter's or form field's value as a case; otherwise a 400 that names the set.
    public static func requestValue(_ raw: String, field: String) throws(APIError) -> Self {
        do {
            return try parse(raw, field: field)
        } catch {
            throw APIError.badRequest(error.description)
        }
    }
}
