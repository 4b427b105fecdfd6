import PurseDatabase
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A free TCP port on 127.0.0.1, for servers whose own URL must be known before they start
/// (sandboxes that call back into the server, benchmarks, live tests).
public enum LoopbackPort {
    /// Ports already handed out by this process: the kernel may offer a released port again,
    /// and two servers of one process (parallel tests) must never share one.
    private static let handedOut = Mutex<Set<Int>>([])

    public static func free() throws -> Int {
        for _ in 0..<64 {
            let port = try probe()
            let fresh = handedOut.withLock { $0.insert(port).inserted }
            if fresh { return port }
        }
        throw ConfigurationError("no unused free port on 127.0.0.1")
    }

    /// A free port whose next port is free too: for a server that also listens one above
    /// (MyCHIPs' websocket). Both are below Linux's ephemeral range (32768–60999), so no outgoing
    /// connection takes either between this check and the server binding them.
    public static func freePair() throws -> Int {
        for _ in 0..<512 {
            let port = Int.random(in: 20_000..<32_700)
            guard isFree(port), isFree(port + 1) else { continue }
            let fresh = handedOut.withLock { taken in
                guard !taken.contains(port), !taken.contains(port + 1) else { return false }
                taken.insert(port)
                taken.insert(port + 1)
                return true
            }
            if fresh { return port }
        }
        throw ConfigurationError("no two adjacent free ports on 127.0.0.1")
    }

    private static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    private static func probe() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ConfigurationError("cannot open a socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ConfigurationError("no free port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
