import Foundation
import PurseFormats

/// The words a person reads, by code, from the provider's language data in the user's language:
/// the app's texts (`mychips.chark` messages, MyCHIPs' own codes among them), and the provider's
/// refusals by their schema code (`!mychips.chits:LMT` → the `LMT` message of `mychips.chits`).
/// A language the provider adds reaches every text here without an app change; a code the data
/// lacks shows the error's own message rather than nothing.
public struct ChipsWords: Sendable, Equatable {
    /// The views whose messages name the provider's refusals the wallet meets.
    public static let refusalViews = ["mychips.chits", "mychips.tallies", ChipsSession.usersView]

    public var app: ViewLanguage?
    public var views: [String: ViewLanguage]

    public init(app: ViewLanguage?, views: [String: ViewLanguage] = [:]) {
        self.app = app
        self.views = views
    }

    /// The app's text `code` (`payinst`, `hlphome` …), `{name}` placeholders filled from
    /// `values`; the code itself when the data has none.
    public func message(_ code: String, _ values: [String: String] = [:]) -> ViewLanguage.Text {
        guard let text = app?.messages[code] else { return ViewLanguage.Text(title: code, help: "") }
        return ViewLanguage.Text(title: Self.fill(text.title, values), help: Self.fill(text.help, values))
    }

    /// What a failure means to the person who met it: a title and a sentence.
    public func explain(_ error: any Error) -> ViewLanguage.Text {
        guard let error = error as? ChipsError else { return fallback(String(describing: error)) }
        if let code = error.code, code.hasPrefix("!"), let (view, name) = Self.schemaCode(code) {
            if let text = views[view]?.messages[name] ?? views[view + "_v_me"]?.messages[name] { return text }
        }
        let code: String? = switch error.code {
        case ChipsError.signingKeyElsewhere.code: "keyelse"
        case ChipsError.signingKeyDiffers.code: "diffkey"
        case let code? where app?.messages[code] != nil: code
        default:
            switch error.kind {
            case .disconnected, .timeout: "lost"
            case .offline: "disconnected"
            case .loginRefused, .notLoggedIn: "failed"
            case .ticketExpired: "expired"
            case .needsUsername: "username"
            case .invalidLink, .invalidTicket: "badlink"
            default: nil
            }
        }
        guard let code, let text = app?.messages[code] else { return fallback(error.message) }
        return ViewLanguage.Text(title: Self.fill(text.title, error.values), help: Self.fill(text.help, error.values))
    }

    /// The one line a page shows for a failure: "Title: sentence".
    public func line(_ error: any Error) -> String {
        let text = explain(error)
        return text.help.isEmpty ? text.title : "\(text.title): \(text.help)"
    }

    private func fallback(_ detail: String) -> ViewLanguage.Text {
        ViewLanguage.Text(title: app?.messages["fail"]?.title ?? "That Did Not Work", help: detail)
    }

    static func schemaCode(_ code: String) -> (view: String, name: String)? {
        let parts = code.dropFirst().split(separator: ":", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        return (String(parts[0]), String(parts[1]))
    }

    static func fill(_ text: String, _ values: [String: String]) -> String {
        values.reduce(text) { $0.replacingOccurrences(of: "{\($1.key)}", with: $1.value) }
    }
}

extension ChipsSession {
    /// The words in the chosen language (cached with the language data).
    public func words() async throws -> ChipsWords {
        var views: [String: ViewLanguage] = [:]
        for view in ChipsWords.refusalViews { views[view] = try? await texts(view) }
        return ChipsWords(app: try await texts(Self.appTexts), views: views)
    }

    /// A failure as the page shows it, in the user's language; the error's own message when the
    /// language data cannot be reached.
    public func describe(_ error: any Error) async -> String {
        guard let words = try? await words() else { return (error as? ChipsError)?.description ?? String(describing: error) }
        return words.line(error)
    }
}
