import HTTPTypes
import PurseDatabase

/// One documented HTTP operation.
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
    public var queryParameters: [(name: String, description: String)]
    public var produces: String

    public init(
        _ method: HTTPRequest.Method, _ path: String, summary: String, tag: String, requiresAuth: Bool = false,
        idempotent: Bool = false, request: YAMLValue? = nil,
        responses: [(status: Int, description: String, schema: YAMLValue?)],
        query: [(name: String, description: String)] = [], produces: String = "application/json"
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
        self.produces = produces
    }
}

/// Schema helpers.
public enum Schema {
    public static func ref(_ name: String) -> YAMLValue { ["$ref": .string("#/components/schemas/\(name)")] }
    public static let string: YAMLValue = ["type": "string"]
    public static let integer: YAMLValue = ["type": "integer", "format": "int64"]
    public static let boolean: YAMLValue = ["type": "boolean"]
    public static func array(_ items: YAMLValue) -> YAMLValue { ["type": "array", "items": items] }
    public static func object(_ properties: [(String, YAMLValue)], required: [String] = []) -> YAMLValue {
        var pairs: [(String, YAMLValue)] = [("type", "object"), ("properties", .object(properties))]
        if !required.isEmpty { pairs.append(("required", .array(required.map(YAMLValue.string)))) }
        return .object(pairs)
    }
    /// The common `{"error": ..., "details"?: ...}` body.
    public static let error: YAMLValue = ref("Error")
}

/// What a module adds to the document.
public struct OpenAPIFragment: Sendable {
    public var operations: [OpenAPIOperation]
    public var schemas: [(String, YAMLValue)]
    public init(operations: [OpenAPIOperation] = [], schemas: [(String, YAMLValue)] = []) {
        self.operations = operations
        self.schemas = schemas
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
            ("Error", Schema.object([("error", Schema.string), ("details", Schema.string)], required: ["error"])),
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
        for (name, description) in operation.queryParameters {
            parameters.append(["name": .string(name), "in": "query", "required": false, "description": .string(description), "schema": Schema.string])
        }
        if operation.idempotent {
            parameters.append([
                "name": "Idempotency-Key", "in": "header", "required": true,
                "description": "A unique key per intended effect; a retry with the same key returns the first response.",
                "schema": Schema.string,
            ])
        }
        if !parameters.isEmpty { pairs.append(("parameters", .array(parameters))) }
        if operation.requiresAuth { pairs.append(("security", .array([.object([("bearerAuth", .array([]))])]))) }
        if let request = operation.requestSchema {
            pairs.append(("requestBody", ["required": true, "content": ["application/json": ["schema": request]]]))
        }
        pairs.append(("responses", .object(operation.responses.map { status, description, schema in
            var response: [(String, YAMLValue)] = [("description", .string(description))]
            if let schema {
                let type = status < 300 ? operation.produces : "application/json"
                response.append(("content", .object([(type, .object([("schema", schema)]))])))
            }
            return (String(status), .object(response))
        })))
        return .object(pairs)
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
