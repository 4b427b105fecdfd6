// Stand-ins for the few UIKit and SwiftUI declarations the Apple-only presenters use
// (Sources/CutiE/Views/CutiE+Presenters.swift), with the isolation and signatures Apple documents,
// and for the SDK types they call. scripts/apple-typecheck.sh type-checks the presenters against
// them in Swift 6 mode, since no step here builds for Apple platforms. Not part of any target.
import Foundation
@MainActor protocol View {}
@MainActor class UIViewController {
    var presentedViewController: UIViewController? { nil }
    var modalPresentationStyle: UIModalPresentationStyle = .automatic
    var sheetPresentationController: UISheetPresentationController? { nil }
    func present(_ viewControllerToPresent: UIViewController, animated flag: Bool, completion: (() -> Void)? = nil) {}
}
enum UIModalPresentationStyle { case automatic, pageSheet }
@MainActor class UISheetPresentationController {
    class Detent { static func medium() -> Detent { Detent() } }
    var detents: [Detent] = []
    var prefersGrabberVisible = false
}
@MainActor class UIHostingController<Content: View>: UIViewController { init(rootView: Content) {} }
@MainActor class UIScene {}
@MainActor class UIWindow { var isKeyWindow: Bool { true }; var rootViewController: UIViewController? { nil } }
@MainActor class UIWindowScene: UIScene { var windows: [UIWindow] { [] } }
@MainActor class UIApplication { static let shared = UIApplication(); var connectedScenes: Set<UIScene> { [] } }
extension UIScene: Hashable { nonisolated static func == (a: UIScene, b: UIScene) -> Bool { a === b }; nonisolated func hash(into h: inout Hasher) { h.combine(ObjectIdentifier(self)) } }
final class CutiE: Sendable {
    var isConfigured: Bool { true }
    func setAnalyticsConsent(_ enabled: Bool) {}
}
struct CutiEInboxView: View { init(cutie: CutiE, conversationId: String?) {} }
struct CutiEFeedbackView: View { init(cutie: CutiE, onSuccess: ((String) -> Void)?) {} }
struct CutiEAnalyticsConsentView: View { init(appName: String, onAnswer: @escaping (Bool) -> Void) {} }
