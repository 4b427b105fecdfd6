import HTTPTypes
import PurseDatabase

/// A documented query or header parameter.
public struct OpenAPIParameter: Sendable {
    public var name: String
    public var description: String
    public var schema: YAMLValue
    public var required: Bool
    public init(_ name: String, _ description: String, schema: YAMLValue = Schema.string, required: Bool = false) {
        self.name = name
        self.description = description
        self.schema = schema
        self.required = required
    }
}

/// One documented HTTP operation.
///
/// The refusals every route of its kind can answer are added when the document is rendered, in
/// the body shape of ``errorSchema`` (the fragment's when nil): 401 on authenticated routes, 400,
/// 413 and 415 on routes with a JSON body, 400 and 422 on idempotent ones, 404 on routes with
/// path parameters.
public struct OpenAPIOperation: Sendable {
    public var method: HTTPRequest.Method
    /// In router syntax, which is OpenAPI's: `/biometric/credentials/{id}`.
    public var path: String
    public var summary: String
    public var tag: String
    public var requiresAuth: Bool
    /// Adds the `Idempotency-Key` header parameter (required).
    public var idempotent: Bool
    public var requestSchema: YAMLValue?
    public var responses: [(status: Int, description: String, schema: YAMLValue?)]
    public var queryParameters: [OpenAPIParameter]
    public var headerParameters: [OpenAPIParameter]
    public var produces: String
    /// Other representations of the success response, chosen by `Accept`.
    public var alternatives: [(type: String, schema: YAMLValue)]
    /// The body of this operation's refusals; nil for the fragment's.
    public var errorSchema: YAMLValue?
    /// False where a missing body is answered like any other request (a third party's wire format).
    public var requestRequired: Bool

    public init(
        _ method: HTTPRequest.Method, _ path: String, summary: String, tag: String, requiresAuth: Bool = false,
        idempotent: Bool = false, request: YAMLValue? = nil,
        responses: [(status: Int, description: String, schema: YAMLValue?)],
        query: [OpenAPIParameter] = [], headers: [OpenAPIParameter] = [], produces: String = "application/json",
        alternatives: [(type: String, schema: YAMLValue)] = [], errorSchema: YAMLValue? = nil, requestRequired: Bool = true
    ) {
        self.method = method
        self.path = path
        self.summary = summary
        self.tag = tag
        self.requiresAuth = requiresAuth
        self.idempotent = idempotent
        self.requestSchema = request
        self.responses = responses
        self.queryParameters = query
        self.headerParameters = headers
        self.produces = produces
        self.alternatives = alternatives
        self.errorSchema = errorSchema
        self.requestRequired = requestRequired
    }
}

/// Schema helpers.
public enum Schema {
    public static func ref(_ name: String) -> YAMLValue { ["$ref": .string("#/components/schemas/\(name)")] }
    public static let string: YAMLValue = ["type": "string"]
    public static let integer: YAMLValue = ["type": "integer", "format": "int64"]
    public static func integer(_ range: ClosedRange<Int64>) -> YAMLValue {
        ["type": "integer", "format": "int64", "minimum": .int(Int(range.lowerBound)), "maximum": .int(Int(range.upperBound))]
    }
    /// A string of `length` Unicode scalars (JSON Schema counts code points).
    public static func string(length: ClosedRange<Int>, pattern: String? = nil, format: String? = nil) -> YAMLValue {
        var pairs: [(String, YAMLValue)] = [("type", "string"), ("minLength", .int(length.lowerBound)), ("maxLength", .int(length.upperBound))]
        if let pattern { pairs.append(("pattern", .string(pattern))) }
        if let format { pairs.append(("format", .string(format))) }
        return .object(pairs)
    }
    public static func pattern(_ pattern: String) -> YAMLValue { ["type": "string", "pattern": .string(pattern)] }
    public static func oneOf(_ values: [String]) -> YAMLValue { ["type": "string", "enum": .array(values.map(YAMLValue.string))] }
    /// A string or null.
    public static let nullableString: YAMLValue = ["type": ["string", "null"]]
    public static let boolean: YAMLValue = ["type": "boolean"]
    public static func array(_ items: YAMLValue) -> YAMLValue { ["type": "array", "items": items] }
    /// - Parameters:
    ///   - anyOfRequired: Alternatives of which at least one must be present in full
    ///     (`[["email"], ["phone"]]`: an email, a phone or both).
    ///   - oneOfRequired: Alternatives of which exactly one must be present.
    public static func object(
        _ properties: [(String, YAMLValue)], required: [String] = [], anyOfRequired: [[String]] = [], oneOfRequired: [[String]] = []
    ) -> YAMLValue {
        var pairs: [(String, YAMLValue)] = [("type", "object"), ("properties", .object(properties))]
        if !required.isEmpty { pairs.append(("required", .array(required.map(YAMLValue.string)))) }
        for (keyword, alternatives) in [("anyOf", anyOfRequired), ("oneOf", oneOfRequired)] where !alternatives.isEmpty {
            pairs.append((keyword, .array(alternatives.map { ["required": .array($0.map(YAMLValue.string))] })))
        }
        return .object(pairs)
    }
    /// The characters Foundation trims as `whitespacesAndNewlines` (Unicode `White_Space`), as the
    /// inside of a regular-expression class.
    public static let whitespaceClass = "\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
    public static let whitespace = "[\\(whitespaceClass)]"
    /// A string with something besides whitespace in it.
    public static func notBlank(length: ClosedRange<Int>) -> YAMLValue {
        ["type": "string", "minLength": .int(length.lowerBound), "maxLength": .int(length.upperBound), "pattern": .string("[^\\(whitespaceClass)]")]
    }
    /// The common `{"error": ..., "code"?: ..., "details"?: ...}` body.
    public static let error: YAMLValue = ref("Error")
}

/// What a module adds to the document.
public struct OpenAPIFragment: Sendable {
    public var operations: [OpenAPIOperation]
    public var schemas: [(String, YAMLValue)]
    /// The body of the fragment's refusals, where an operation does not say otherwise.
    public var errorSchema: YAMLValue
    public init(operations: [OpenAPIOperation] = [], schemas: [(String, YAMLValue)] = [], errorSchema: YAMLValue = Schema.error) {
        self.operations = operations.map { operation in
            var operation = operation
            if operation.errorSchema == nil { operation.errorSchema = errorSchema }
            return operation
        }
        self.schemas = schemas
        self.errorSchema = errorSchema
    }
}

/// The OpenAPI 3.1 document of every route the server serves.
public struct OpenAPIDocument: Sendable {
    public var title: String
    public var version: String
    public var fragments: [OpenAPIFragment]

    public init(title: String, version: String, fragments: [OpenAPIFragment]) {
        self.title = title
        self.version = version
        self.fragments = fragments
    }

    public var operations: [OpenAPIOperation] { fragments.flatMap(\.operations) }

    public func yaml() -> String {
        var paths: [(String, [OpenAPIOperation])] = []
        for operation in operations {
            if let index = paths.firstIndex(where: { $0.0 == operation.path }) {
                paths[index].1.append(operation)
            } else {
                paths.append((operation.path, [operation]))
            }
        }
        var schemas: [(String, YAMLValue)] = [
            ("Error", Schema.object([("error", Schema.string), ("code", Schema.string), ("details", Schema.string)], required: ["error"])),
        ]
        for fragment in fragments { schemas.append(contentsOf: fragment.schemas) }

        let document: YAMLValue = [
            "openapi": "3.1.0",
            "info": ["title": .string(title), "version": .string(version)],
            "paths": .object(paths.map { path, operations in
                (path, .object(operations.map { (($0.method.rawValue.lowercased()), Self.render($0)) }))
            }),
            "components": [
                "schemas": .object(schemas),
                "securitySchemes": ["bearerAuth": ["type": "http", "scheme": "bearer", "bearerFormat": "JWT"]],
            ],
        ]
        return document.rendered()
    }

    static func render(_ operation: OpenAPIOperation) -> YAMLValue {
        var pairs: [(String, YAMLValue)] = [
            ("summary", .string(operation.summary)),
            ("tags", [.string(operation.tag)]),
            ("operationId", .string(operationID(operation))),
        ]
        var parameters: [YAMLValue] = []
        for name in pathParameters(operation.path) {
            parameters.append(["name": .string(name), "in": "path", "required": true, "schema": Schema.string])
        }
        for (location, list) in [("query", operation.queryParameters), ("header", operation.headerParameters)] {
            for parameter in list {
                parameters.append([
                    "name": .string(parameter.name), "in": .string(location), "required": .bool(parameter.required),
                    "description": .string(parameter.description), "schema": parameter.schema,
                ])
            }
        }
        if operation.idempotent {
            parameters.append([
                "name": "Idempotency-Key", "in": "header", "required": true,
                "description": "A unique key per intended effect; a retry with the same key returns the first response.",
                // 1 to 255 printable ASCII characters; HTTP drops spaces at either end.
                "schema": ["type": "string", "pattern": "^[\\u0021-\\u007e](?:[\\u0020-\\u007e]{0,253}[\\u0021-\\u007e])?$"],
            ])
        }
        if !parameters.isEmpty { pairs.append(("parameters", .array(parameters))) }
        if operation.requiresAuth { pairs.append(("security", .array([.object([("bearerAuth", .array([]))])]))) }
        if let request = operation.requestSchema {
            pairs.append(("requestBody", ["required": .bool(operation.requestRequired), "content": ["application/json": ["schema": request]]]))
        }
        pairs.append(("responses", .object(responses(of: operation).map { status, description, schema in
            var response: [(String, YAMLValue)] = [("description", .string(description))]
            if let schema {
                // Pages answer their refusals as pages too.
                let type = status < 300 || operation.produces == "text/html" ? operation.produces : "application/json"
                var content: [(String, YAMLValue)] = [(type, .object([("schema", schema)]))]
                if status < 300 {
                    content += operation.alternatives.map { ($0.type, .object([("schema", $0.schema)])) }
                }
                response.append(("content", .object(content)))
            }
            return (String(status), .object(response))
        })))
        return .object(pairs)
    }

    /// The operation's own responses plus the refusals every route of its kind can answer, by status.
    static func responses(of operation: OpenAPIOperation) -> [(status: Int, description: String, schema: YAMLValue?)] {
        var responses = operation.responses
        let error = operation.errorSchema ?? Schema.error
        func add(_ status: Int, _ description: String) {
            if !responses.contains(where: { $0.status == status }) { responses.append((status, description, error)) }
        }
        if operation.requiresAuth { add(401, "Authentication required") }
        if operation.requestSchema != nil {
            add(400, "Malformed or invalid body")
            add(413, "Body too large")
            add(415, "Content-Type is not application/json")
        }
        if operation.idempotent {
            add(400, "Idempotency-Key missing")
            add(422, "Idempotency-Key reused with a different body")
        }
        if !pathParameters(operation.path).isEmpty { add(404, "Not found") }
        return responses.sorted { $0.status < $1.status }
    }

    static func pathParameters(_ path: String) -> [String] {
        path.split(separator: "/").compactMap { part in
            part.hasPrefix("{") && part.hasSuffix("}") ? String(part.dropFirst().dropLast()) : nil
        }
    }

    static func operationID(_ operation: OpenAPIOperation) -> String {
        let words = operation.path.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map { word in
            word.prefix(1).uppercased() + word.dropFirst()
        }
        return operation.method.rawValue.lowercased() + (words.isEmpty ? "Index" : words.joined())
    }
}
