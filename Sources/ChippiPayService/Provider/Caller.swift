import Foundation
import HTTPTypes
import PurseFormats
import PurseServer

/// Who a provider request acts for: a merchant, with its secret key (its own backend), or one
/// of its app users (user mode: the publishable key and the user's token, all an app holds).
struct Caller: Sendable {
    var merchant: Merchant
    /// The app user (`external_user_id`) a user-mode request's token names; nil with the
    /// merchant's secret key, which reaches all of the merchant's users.
    var user: String?

    /// 403 for a user token on a route that spans the merchant's users.
    static let merchantOnly = APIError(.forbidden, "This needs the merchant's secret key: a user token reaches only its own user's wallet")

    /// Whether the caller may see and act on what belongs to `externalUserID`.
    func reaches(_ externalUserID: String) -> Bool { user == nil || user == externalUserID }

    /// Whose Idempotency-Keys a request's key is among: the merchant's own, or one user's, so
    /// that no user's key ever answers with another's stored response.
    var idempotencyOwner: UserID {
        UserID("chippi-merchant:" + merchant.id + (user.map { "#user:" + $0 } ?? ""))
    }
}
