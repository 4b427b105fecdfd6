import Foundation
import PurseFormats
import PurseKit

/// Signed chits waiting for the provider: a chit scanned or opened while the app is offline (or
/// signed for a partner's QR) is kept in the app's preferences and delivered when the connection
/// comes up. Delivery is safe to repeat — the provider stores a chit once by its id — so a chit
/// leaves the outbox only when the provider has it, or has refused it for good.
public actor ChipsOutbox {
    static let key = "mychips.outbox"

    /// A chit the provider refused, with its reason.
    public struct Refusal: Sendable, Equatable {
        public var chit: SignedChit
        public var reason: String
    }

    let preferences: any Preferences
    public private(set) var refused: [Refusal] = []

    public init(preferences: any Preferences) { self.preferences = preferences }

    public var pending: [SignedChit] {
        guard let text = preferences.string(forKey: Self.key), case .array(let items)? = try? StrictJSON.parse(Array(text.utf8)) else { return [] }
        return items.compactMap { try? SignedChit(json: $0) }
    }

    private func store(_ chits: [SignedChit]) {
        preferences.set(chits.isEmpty ? nil : JavaScriptJSON.stringify(.array(chits.map(\.json))), forKey: Self.key)
    }

    public func enqueue(_ chit: SignedChit) {
        var chits = pending
        guard !chits.contains(where: { $0.core.uuid == chit.core.uuid }) else { return }
        chits.append(chit)
        store(chits)
    }

    /// Takes a chit out: the provider has it, or refused it for good.
    public func remove(_ chit: SignedChit) {
        store(pending.filter { $0.core.uuid != chit.core.uuid })
    }

    /// Delivers what is waiting, in order; stops at the first that cannot be sent now (offline,
    /// dropped, timed out) and keeps it and the rest. Returns the chits the provider took.
    @discardableResult
    public func flush(_ session: ChipsSession) async -> [ChipsChit] {
        var delivered: [ChipsChit] = []
        var remaining = pending
        while let chit = remaining.first {
            do {
                delivered.append(try await session.deliver(chit))
            } catch let error as ChipsError where error.isAnswerLost || error.kind == .notLoggedIn {
                break
            } catch {
                refused.append(Refusal(chit: chit, reason: "\(error)"))
            }
            remaining.removeFirst()
            store(remaining)
        }
        return delivered
    }

    /// Delivers whenever the connection comes up, until the task is cancelled.
    public func run(_ session: ChipsSession) async {
        for await state in await session.connection.states() where state == .connected {
            await flush(session)
        }
    }
}
