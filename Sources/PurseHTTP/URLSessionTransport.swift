import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport an iOS app uses: `URLSession`.
public struct URLSessionTransport: HTTPTransport {
    let session: URLSession

    public init(session: URLSession = .shared) { self.session = session }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.httpBody = request.body
        let (seconds, attoseconds) = request.timeout.components
        urlRequest.timeoutInterval = Double(seconds) + Double(attoseconds) / 1e18
        for field in request.headerFields { urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName) }
        do {
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else { throw PurseError.invalidResponse("not an HTTP response") }
            guard let status = HTTPResponse.Status(wireCode: http.statusCode) else { throw PurseError.invalidResponse("status \(http.statusCode) is not an HTTP status") }
            var fields = HTTPFields()
            for (key, value) in http.allHeaderFields {
                if let key = key as? String, let name = HTTPField.Name(key), let value = value as? String { fields.append(HTTPField(name: name, value: value)) }
            }
            return TransportResponse(status: status, headerFields: fields, body: data)
        } catch let error as URLError {
            switch error.code {
            case .timedOut: throw PurseError.timeout(error.localizedDescription)
            case .cancelled: throw PurseError.cancelled
            default: throw PurseError.offline(error.localizedDescription)
            }
        }
    }
}
