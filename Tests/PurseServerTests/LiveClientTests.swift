import HummingbirdTesting
import HTTPTypes
import Foundation
import PurseDatabase
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import PurseTestSupport
import Testing

/// The real client stack (APIClient over AsyncHTTPClient) against a live server on 127.0.0.1.
@Suite("Live client")
struct LiveClientTests {
    struct AuthAnswer: Decodable { var token: String; var user: Me.User }
    struct Me: Decodable {
        struct User: Decodable { var id: String; var email: String? }
        var user: User
    }

    @Test func registerLoginWhoAmIOverTheWire() async throws {
        let server = try await TestServer.make()
        try await server.withLive { client in
            let port = try #require(client.port)
            let api = APIClient(
                session: ClientSession(baseURL: URL(string: "http://127.0.0.1:\(port)")!, store: InMemorySecureStore()),
                transport: AsyncHTTPClientTransport()
            )
            let registered: AuthAnswer = try await api.send(
                .post, "/auth/register", body: ["email": "live@example.com", "password": "correct horse"], authenticated: false
            )
            try await api.session.setToken(registered.token)
            let me: Me = try await api.send(.get, "/auth/me")
            #expect(me.user.id == registered.user.id)

            try await api.session.setToken(nil)
            await #expect(throws: PurseError.unauthorized) {
                let _: Me = try await api.send(.get, "/auth/me")
            }
            do {
                let _: AuthAnswer = try await api.send(.post, "/auth/register", body: ["email": "live@example.com", "password": "correct horse"], authenticated: false)
                Issue.record("duplicate registration succeeded")
            } catch let error as PurseError {
                #expect(error.status == 409)
                #expect(error.message == "An account with this email already exists")
            }
        }
    }

    @Test func unreachableServerIsOffline() async throws {
        let api = APIClient(session: ClientSession(baseURL: URL(string: "http://127.0.0.1:1")!), transport: AsyncHTTPClientTransport(), retry: .none)
        await #expect(throws: PurseError.offline) {
            let _: EmptyResponse = try await api.send(.get, "/health")
        }
    }
}
