#if os(iOS) && canImport(UIKit) && canImport(SwiftUI)
import Foundation
import SwiftUI
import UIKit

// The real SDK's UIKit entry points: each presents one of the SwiftUI screens as a sheet, from
// the given view controller or from the topmost one of the key window. Like the real SDK's, they
// may be called from any thread (a notification delegate is often nonisolated): the work hops to
// the main actor.

extension CutiE {
    /// Presents the inbox; with a `conversationId` (a tapped push) it opens that conversation.
    /// Does nothing until the SDK is configured.
    public func showInbox(from viewController: UIViewController? = nil, conversationId: String? = nil) {
        let given = MainActorBound(viewController)
        Task { @MainActor in
            guard self.isConfigured else { return }
            self.presentSheet(CutiEInboxView(cutie: self, conversationId: conversationId), from: given.value, compact: false)
        }
    }

    /// Presents the feedback form; `onSuccess` gets the new conversation's id.
    /// Does nothing until the SDK is configured.
    public func showFeedback(from viewController: UIViewController? = nil, onSuccess: ((String) -> Void)? = nil) {
        let given = MainActorBound((viewController, onSuccess))
        Task { @MainActor in
            guard self.isConfigured else { return }
            self.presentSheet(CutiEFeedbackView(cutie: self, onSuccess: given.value.1), from: given.value.0, compact: false)
        }
    }

    /// Asks the user to opt in to the daily anonymous activity ping, records the answer, and
    /// calls `completion` with it (on the main thread).
    public func requestAnalyticsConsent(from viewController: UIViewController? = nil, completion: @escaping (Bool) -> Void) {
        let given = MainActorBound((viewController, completion))
        Task { @MainActor in self.presentConsent(from: given.value.0, completion: given.value.1) }
    }

    @MainActor
    private func presentConsent(from viewController: UIViewController?, completion: @escaping (Bool) -> Void) {
        let info = Bundle.main.infoDictionary
        let appName = info?["CFBundleDisplayName"] as? String ?? info?["CFBundleName"] as? String ?? "this app"
        let view = CutiEAnalyticsConsentView(appName: appName) { [self] granted in
            setAnalyticsConsent(granted)
            completion(granted)
        }
        presentSheet(view, from: viewController, compact: true)
    }

    @MainActor
    private func presentSheet<Content: View>(_ view: Content, from viewController: UIViewController?, compact: Bool) {
        let host = UIHostingController(rootView: view)
        host.modalPresentationStyle = .pageSheet
        if compact, let sheet = host.sheetPresentationController {
            sheet.detents = [.medium()]
            sheet.prefersGrabberVisible = true
        }
        (viewController ?? Self.topViewController())?.present(host, animated: true)
    }

    @MainActor
    private static func topViewController() -> UIViewController? {
        let windows = UIApplication.shared.connectedScenes.compactMap { $0 as? UIWindowScene }.flatMap(\.windows)
        guard var top = windows.first(where: \.isKeyWindow)?.rootViewController else { return nil }
        while let presented = top.presentedViewController { top = presented }
        return top
    }
}
/// What the caller handed over to be used on the main actor only (a view controller, a UIKit
/// completion): carried to it unchecked, as the real SDK's `DispatchQueue.main.async` does.
struct MainActorBound<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
#endif
