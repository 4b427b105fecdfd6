#if canImport(SwiftUI)
import Foundation
import SwiftUI

// The SDK's screens. Each is a thin SwiftUI layer over its view model in CutiEViewModels.swift,
// where the behaviour lives and is tested on every platform; these files only lay it out.

/// The feedback form: a category, an optional title and the message. `onSuccess` gets the new
/// conversation's id, and the form closes itself.
public struct CutiEFeedbackView: View {
    @State private var model: CutiEFeedbackViewModel
    @Environment(\.dismiss) private var dismiss
    private let onSuccess: ((String) -> Void)?

    public init(onSuccess: ((String) -> Void)? = nil) {
        self.init(cutie: .shared, onSuccess: onSuccess)
    }

    public init(cutie: CutiE, onSuccess: ((String) -> Void)? = nil) {
        _model = State(initialValue: CutiEFeedbackViewModel(cutie: cutie))
        self.onSuccess = onSuccess
    }

    public var body: some View {
        NavigationStack {
            Form {
                Section("Category") {
                    Picker("Category", selection: $model.category) {
                        ForEach(ConversationCategory.allCases, id: \.self) { category in
                            Text(category.displayName).tag(category)
                        }
                    }
                }
                Section("Title (optional)") {
                    TextField("Title", text: $model.title)
                }
                Section("Message") {
                    TextEditor(text: $model.message)
                        .frame(minHeight: 160)
                }
                if case .failed(let reason) = model.state {
                    Section {
                        Text(reason).foregroundStyle(.red)
                    }
                }
            }
            .navigationTitle("Send Feedback")
            .toolbar {
                ToolbarItem(placement: .cancellationAction) {
                    Button("Cancel") { dismiss() }
                }
                ToolbarItem(placement: .confirmationAction) {
                    if model.state == .sending {
                        ProgressView()
                    } else {
                        Button("Send") { Task { await model.send() } }
                            .disabled(!model.canSend)
                    }
                }
            }
            .onChange(of: model.state) { _, state in
                if case .sent(let conversationId) = state {
                    onSuccess?(conversationId)
                    dismiss()
                }
            }
        }
    }
}

/// The inbox: conversations with unread badges, pull to refresh, a button for new feedback.
/// Given a `conversationId` (a tapped push), it opens that conversation at once.
public struct CutiEInboxView: View {
    @State private var model: CutiEInboxViewModel
    @State private var path: [String]
    @State private var composing = false
    @Environment(\.dismiss) private var dismiss
    private let cutie: CutiE

    public init(conversationId: String? = nil) {
        self.init(cutie: .shared, conversationId: conversationId)
    }

    public init(cutie: CutiE, conversationId: String? = nil) {
        self.cutie = cutie
        _model = State(initialValue: CutiEInboxViewModel(cutie: cutie))
        _path = State(initialValue: conversationId.map { [$0] } ?? [])
    }

    public var body: some View {
        NavigationStack(path: $path) {
            content
                .navigationTitle("Messages")
                .navigationDestination(for: String.self) { conversationId in
                    CutiEConversationView(conversationId: conversationId, cutie: cutie)
                }
                .toolbar {
                    ToolbarItem(placement: .cancellationAction) {
                        Button("Done") { dismiss() }
                    }
                    ToolbarItem(placement: .primaryAction) {
                        Button { composing = true } label: { Image(systemName: "square.and.pencil") }
                            .accessibilityLabel("New conversation")
                    }
                }
                .refreshable { await model.refresh() }
                .task { await model.refresh() }
                .sheet(isPresented: $composing, onDismiss: { Task { await model.refresh() } }) {
                    CutiEFeedbackView(cutie: cutie, onSuccess: nil)
                }
        }
    }

    @ViewBuilder private var content: some View {
        if model.isEmpty {
            ContentUnavailableView("No conversations yet", systemImage: "bubble.left.and.bubble.right",
                                   description: Text("Send feedback and the replies appear here."))
        } else if !model.hasLoaded && model.errorMessage == nil {
            ProgressView()
        } else {
            List {
                if let message = model.errorMessage {
                    Text(message).foregroundStyle(.red)
                }
                ForEach(model.conversations) { conversation in
                    NavigationLink(value: conversation.id) {
                        row(conversation)
                    }
                }
            }
        }
    }

    private func row(_ conversation: Conversation) -> some View {
        HStack(alignment: .firstTextBaseline) {
            VStack(alignment: .leading, spacing: 4) {
                Text(conversation.title ?? conversation.category?.displayName ?? "Conversation")
                    .font(.headline)
                Text(Date(timeIntervalSince1970: Double(conversation.updatedAt ?? conversation.createdAt) / 1000), style: .relative)
                    .font(.caption)
                    .foregroundStyle(.secondary)
            }
            Spacer()
            if let badge = model.unreadBadge(for: conversation) {
                Text(badge)
                    .font(.caption.bold())
                    .foregroundStyle(.white)
                    .padding(.horizontal, 8)
                    .padding(.vertical, 2)
                    .background(Color.accentColor, in: Capsule())
                    .accessibilityLabel("\(badge) unread")
            }
        }
    }
}

/// One conversation: the thread, a composer, and messages that failed to send with a retry.
public struct CutiEConversationView: View {
    @State private var model: CutiEConversationViewModel
    private let targetMessageId: String?

    public init(conversation: Conversation, targetMessageId: String? = nil) {
        self.init(conversationId: conversation.id, cutie: .shared, targetMessageId: targetMessageId)
    }

    public init(conversationId: String, cutie: CutiE = .shared, targetMessageId: String? = nil) {
        _model = State(initialValue: CutiEConversationViewModel(conversationId: conversationId, cutie: cutie))
        self.targetMessageId = targetMessageId
    }

    public var body: some View {
        VStack(spacing: 0) {
            ScrollViewReader { proxy in
                ScrollView {
                    LazyVStack(alignment: .leading, spacing: 8) {
                        ForEach(model.rows) { row in
                            bubble(row).id(row.id)
                        }
                    }
                    .padding()
                }
                .onChange(of: model.rows.count) { _, _ in
                    let target = model.rows.first(where: { $0.id == targetMessageId }) ?? model.rows.last
                    if let target { withAnimation { proxy.scrollTo(target.id, anchor: .bottom) } }
                }
            }
            if let message = model.errorMessage {
                Text(message).font(.footnote).foregroundStyle(.red).padding(.horizontal)
            }
            Divider()
            HStack(alignment: .bottom) {
                TextField("Message", text: $model.draft, axis: .vertical)
                    .lineLimit(1...5)
                    .textFieldStyle(.roundedBorder)
                Button { Task { await model.send() } } label: {
                    Image(systemName: "arrow.up.circle.fill").font(.title2)
                }
                .disabled(!model.canSend)
                .accessibilityLabel("Send")
            }
            .padding()
        }
        .navigationTitle(model.conversation?.title ?? "Conversation")
        .task { await model.load() }
        .refreshable { await model.load() }
    }

    @ViewBuilder private func bubble(_ row: CutiEConversationViewModel.Row) -> some View {
        HStack {
            if row.isFromUser { Spacer(minLength: 40) }
            VStack(alignment: row.isFromUser ? .trailing : .leading, spacing: 4) {
                if !row.isFromUser, let name = row.senderName {
                    Text(name).font(.caption).foregroundStyle(.secondary)
                }
                Text(row.text)
                    .padding(10)
                    .foregroundStyle(row.isFromUser ? Color.white : Color.primary)
                    .background(row.isFromUser ? Color.accentColor : Color.secondary.opacity(0.15),
                                in: RoundedRectangle(cornerRadius: 14))
                switch row.delivery {
                case .sent:
                    Text(Date(timeIntervalSince1970: Double(row.createdAt) / 1000), style: .time)
                        .font(.caption2).foregroundStyle(.secondary)
                case .sending:
                    Text("Sending…").font(.caption2).foregroundStyle(.secondary)
                case .failed:
                    Button("Not sent. Tap to retry") { Task { await model.retry(row.id) } }
                        .font(.caption2)
                        .foregroundStyle(.red)
                }
            }
            if !row.isFromUser { Spacer(minLength: 40) }
        }
    }
}

/// The opt-in sheet for the daily anonymous activity ping.
struct CutiEAnalyticsConsentView: View {
    let appName: String
    let onDecision: (Bool) -> Void
    @Environment(\.dismiss) private var dismiss

    init(appName: String, onDecision: @escaping (Bool) -> Void) {
        self.appName = appName
        self.onDecision = onDecision
    }

    var body: some View {
        VStack(spacing: 20) {
            Image(systemName: "chart.bar.xaxis.ascending")
                .font(.system(size: 44))
                .foregroundStyle(Color.accentColor)
                .padding(.top, 28)
            Text("Help improve \(appName)")
                .font(.title2.weight(.semibold))
                .multilineTextAlignment(.center)
            Text("Allow one anonymous signal a day that the app was used. It carries no personal information, and you can change your mind in Settings.")
                .foregroundStyle(.secondary)
                .multilineTextAlignment(.center)
                .fixedSize(horizontal: false, vertical: true)
                .padding(.horizontal)
            Spacer()
            VStack(spacing: 12) {
                Button { decide(true) } label: { Text("Allow").frame(maxWidth: .infinity).padding(.vertical, 12) }
                    .buttonStyle(.borderedProminent)
                Button { decide(false) } label: { Text("Not Now").frame(maxWidth: .infinity).padding(.vertical, 12) }
                    .buttonStyle(.bordered)
            }
            .padding([.horizontal, .bottom])
        }
        .padding()
    }

    private func decide(_ granted: Bool) {
        onDecision(granted)
        dismiss()
    }
}
#endif
