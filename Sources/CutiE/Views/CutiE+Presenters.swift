#if os(iOS) && canImport(UIKit) && canImport(SwiftUI)
import Foundation
import SwiftUI
import UIKit

// The real SDK's UIKit entry points: each presents one of the SwiftUI screens as a sheet, from
// the given view controller or from the topmost one of the key window.

extension CutiE {
    /// Presents the inbox; with a `conversationId` (a tapped push) it opens that conversation.
    /// Does nothing until the SDK is configured.
    @MainActor
    public func showInbox(from viewController: UIViewController? = nil, conversationId: String? = nil) {
        guard isConfigured else { return }
        presentSheet(CutiEInboxView(cutie: self, conversationId: conversationId), from: viewController, compact: false)
    }

    /// Presents the feedback form; `onSuccess` gets the new conversation's id.
    /// Does nothing until the SDK is configured.
    @MainActor
    public func showFeedback(from viewController: UIViewController? = nil, onSuccess: ((String) -> Void)? = nil) {
        guard isConfigured else { return }
        presentSheet(CutiEFeedbackView(cutie: self, onSuccess: onSuccess), from: viewController, compact: false)
    }

    /// Asks the user to opt in to the daily anonymous activity ping, records the answer, and
    /// calls `completion` with it.
    @MainActor
    public func requestAnalyticsConsent(from viewController: UIViewController? = nil, completion: @escaping (Bool) -> Void) {
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
#endif
