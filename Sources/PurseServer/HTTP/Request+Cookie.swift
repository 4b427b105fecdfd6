import Foundation
import HTTPTypes
import Hummingbird

extension Request {
    /// The value of the cookie `name` the request sends, or nil (the first, when sent twice).
    public func cookie(_ name: String) -> String? {
        for header in headers[values: .cookie] {
            for part in header.split(separator: ";") {
                let pair = part.trimmingCharacters(in: .whitespaces)
                if pair.hasPrefix(name + "=") { return String(pair.dropFirst(name.count + 1)) }
            }
        }
        return nil
    }
}
