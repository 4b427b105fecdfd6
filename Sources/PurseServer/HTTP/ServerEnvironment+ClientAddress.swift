import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

extension ServerEnvironment {
    /// The client's IP address: the peer's, or — when the peer is one of
    /// ``PurseConfiguration/trustedProxies`` — the last address its `X-Forwarded-For` appends
    /// (nginx's `$proxy_add_x_forwarded_for`). Addresses a client wrote earlier in that header are
    /// never believed, so a client cannot choose the bucket its requests are counted in.
    public func clientAddress(of request: Request, context: PurseRequestContext) -> String? {
        let peer = context.remoteAddress?.ipAddress
        guard let peer, configuration.trustedProxies.contains(peer),
              let forwarded = request.headers[values: .xForwardedFor].last else { return peer }
        let last = forwarded.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        return last.isEmpty || last.utf8.count > 64 ? peer : last
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
