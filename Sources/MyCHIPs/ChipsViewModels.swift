import Foundation
import Observation
import PurseFormats

/// First launch: the app can do little but take a connection ticket — scanned as a QR, opened
/// as a deep link, or pasted — then ask for the username when the ticket has none, and log in.
@MainActor
@Observable
public final class FirstLaunchViewModel {
    public enum Step: Equatable {
        case scan
        case askUsername(ChipsTicket)
        case connecting
        case done
        case failed(String)
    }

    public private(set) var step: Step = .scan
    public var username = ""
    let connection: ChipsConnection

    public init(connection: ChipsConnection) { self.connection = connection }

    /// A scanned or opened text: a ticket goes on to login (or to the username prompt); anything
    /// else is refused with the reason.
    public func received(_ text: String) async {
        do {
            let link = try ChipsLink.parse(text)
            guard case .ticket(let ticket) = link else {
                step = .failed("this is a \(link.kind) link: connect to your provider with a ticket first")
                return
            }
            if ticket.user == nil && username.isEmpty {
                step = .askUsername(ticket)
                return
            }
            await connect(ticket)
        } catch {
            step = .failed(error.description)
        }
    }

    /// After the username prompt.
    public func submitUsername() async {
        guard case .askUsername(let ticket) = step else { return }
        guard !username.trimmingCharacters(in: .whitespaces).isEmpty else { return }
        await connect(ticket)
    }

    private func connect(_ ticket: ChipsTicket) async {
        step = .connecting
        do {
            try await connection.connect(ticket: ticket, username: username.trimmingCharacters(in: .whitespaces))
            step = .done
        } catch let error as ChipsError {
            step = .failed(error.message)
        } catch {
            step = .failed("\(error)")
        }
    }

    public func startOver() {
        step = .scan
        username = ""
    }
}

/// The banner every screen shows: the connection's state in the user's language.
@MainActor
@Observable
public final class ConnectionBannerViewModel {
    public private(set) var state: ChipsConnectionState = .disconnected
    public private(set) var title = ""
    public private(set) var detail = ""
    /// Shown only when not connected.
    public var isVisible: Bool { state != .connected }
    private var texts: ViewLanguage?
    let session: ChipsSession

    public init(session: ChipsSession) { self.session = session }

    /// Follows the connection until the task is cancelled.
    public func run() async {
        for await state in await session.connection.states() {
            self.state = state
            if state == .connected, texts == nil { texts = try? await session.texts(ChipsSession.appTexts) }
            render()
        }
    }

    /// Labels changed (a new language).
    public func languageChanged(_ texts: ViewLanguage) {
        self.texts = texts
        render()
    }

    private func render() {
        let code: String
        switch state {
        case .connected: code = "connected"
        case .connecting: code = "connecting"
        case .disconnected: code = "disconnected"
        case .failed: code = "failed"
        }
        title = texts?.message(code) ?? code.capitalized
        if case .failed(let reason) = state { detail = reason } else { detail = texts?.messages[code]?.help ?? "" }
    }
}

/// The profile page: the user's certificate fields with their labels, editable where the
/// provider allows, saved with the provider's checks (its refusal shown in the user's language).
@MainActor
@Observable
public final class ProfileViewModel {
    public private(set) var user: ChipsUser?
    public private(set) var labels: ViewLanguage?
    public private(set) var meta: ViewMeta?
    public private(set) var error: String?
    public private(set) var isSaving = false
    /// Edits not saved yet, by column.
    public var draft: [String: String] = [:]
    let session: ChipsSession

    public init(session: ChipsSession) { self.session = session }

    public func load() async {
        do {
            user = try await session.me()
            labels = try await session.texts(ChipsSession.usersView)
            meta = try await session.meta(ChipsSession.usersView)
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// Whether a column can be edited here.
    public func isEditable(_ column: String) -> Bool { meta?.column(column)?.writable == true }

    /// A column's label in the user's language.
    public func label(_ column: String) -> String { labels?.label(column) ?? column }

    /// Saves the draft; empty text clears an optional field.
    public func save() async {
        guard !draft.isEmpty else { return }
        isSaving = true
        defer { isSaving = false }
        var fields: [String: JSONValue] = [:]
        for (column, text) in draft { fields[column] = text.isEmpty ? .null : .string(text) }
        do {
            user = try await session.updateProfile(fields)
            draft = [:]
            error = nil
        } catch {
            // A refusal with a view-specific code (`!mychips.users_v_me:CTY`) reads as the
            // language data's message for it.
            self.error = await session.describe(error)
        }
    }

}

/// The language picker: the provider's languages; choosing one reloads every label.
@MainActor
@Observable
public final class LanguagePickerViewModel {
    public private(set) var languages: [ChipsLanguage] = []
    public private(set) var selected: String = "eng"
    public private(set) var error: String?
    /// The labels loaded for the chosen language, by view.
    public private(set) var texts: [String: ViewLanguage] = [:]
    let session: ChipsSession

    public init(session: ChipsSession) { self.session = session }

    public func load() async {
        selected = await session.language
        do {
            languages = try await session.languages()
        } catch {
            self.error = (error as? ChipsError)?.message ?? "\(error)"
        }
    }

    public func choose(_ code: String) async {
        do {
            texts = try await session.setLanguage(code)
            selected = code
            error = nil
        } catch {
            self.error = (error as? ChipsError)?.message ?? "\(error)"
        }
    }
}
