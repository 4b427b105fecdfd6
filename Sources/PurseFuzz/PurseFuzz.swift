import Foundation
#if PURSE_LIBFUZZER
import CLibFuzzer
#endif

/// libFuzzer harnesses over every parser that reads untrusted bytes, one executable for all:
/// `PURSE_FUZZ_TARGET` names the parser (``FuzzTarget``).
///
/// `scripts/fuzz/libfuzzer.sh` builds this target with libFuzzer's instrumentation, the address
/// sanitizer and `-DPURSE_LIBFUZZER`, and runs each target for a bounded time from its corpus under `Fuzz/corpus/TARGET`; there
/// `main` hands over to libFuzzer's driver. A plain build replays inputs instead, which is how a
/// crash found by CI is reproduced under a debugger:
///
///     PURSE_FUZZ_TARGET=flatjson swift run PurseFuzz Fuzz/corpus/flatjson .ci-artifacts/fuzz/flatjson-crash-…
///
/// (`PURSE_FUZZ_TARGET=storekit swift run PurseFuzz --seed Fuzz/corpus/storekit` writes the
/// StoreKit corpus's genuine seed.)
@main
enum PurseFuzz {
    static func main() {
        let target = FuzzTarget.chosen
        #if PURSE_LIBFUZZER
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        _ = target
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            FuzzTarget.chosen.run(Array(UnsafeBufferPointer(start: data, count: size)))
            return 0
        })
        #else
        if CommandLine.arguments.dropFirst().first == "--seed" {
            // The storekit corpus's genuine JWS (signed under the harness's fixed development root).
            guard let directory = CommandLine.arguments.dropFirst(2).first, let jws = try? AppleHarness.storeKitSeed() else { fatalError("--seed DIRECTORY") }
            FileManager.default.createFile(atPath: directory + "/seed-jws", contents: Data(jws.utf8))
            return
        }
        var count = 0
        for path in CommandLine.arguments.dropFirst() {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: path))?.map { path + "/" + $0 } ?? [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target.run(Array(data))
                count += 1
            }
        }
        print("\(target.rawValue): \(count) inputs replayed, no failure")
        #endif
    }
}

/// The parsers under fuzzing. Each reads untrusted bytes and checks what such a parser must
/// hold: no trap, and what it accepts survives its own writer (or a second reader) unchanged.
enum FuzzTarget: String, CaseIterable, Sendable {
    // PurseFormats
    case strictjson, cbor, jsdate, decimal, base64url, hex, uri, checked, authdata, imageheader, pdftext
    // Starknet: felts, u256 and STRK text; a node's JSON-RPC answers and the transactions a node reads
    case felt, u256, strk, starknetrpc
    // Server and client readers
    case flatjson, chipslink, appattest, storekit
    // PurseP521 against swift-crypto
    case p521

    /// The target named by `PURSE_FUZZ_TARGET`.
    static let chosen: FuzzTarget = {
        guard let name = ProcessInfo.processInfo.environment["PURSE_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
            fatalError("PURSE_FUZZ_TARGET must be one of \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return target
    }()

    func run(_ bytes: [UInt8]) {
        switch self {
        case .strictjson, .cbor, .jsdate, .decimal, .base64url, .hex, .uri, .checked, .authdata, .imageheader, .pdftext: FormatsHarness.run(self, bytes)
        case .felt, .u256, .strk, .starknetrpc: StarknetHarness.run(self, bytes)
        case .flatjson: FlatJSONHarness.run(bytes)
        case .chipslink: ChipsLinkHarness.run(bytes)
        case .appattest, .storekit: AppleHarness.run(self, bytes)
        case .p521: P521Harness.run(bytes)
        }
    }
}

/// A property every input must keep; a failure stops the run with the input saved.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("property failed: \(message())") }
}

/// Runs async work to its end from libFuzzer's synchronous callback.
func blocking(_ work: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        await work()
        done.signal()
    }
    done.wait()
}
