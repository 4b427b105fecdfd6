// What every libFuzzer harness under Fuzz/ shares (compiled into each by scripts/fuzz/libfuzzer.sh):
// the entry point libFuzzer calls, the target chosen by PURSE_FUZZ_TARGET, and property checks.
import Foundation

/// The harness's target named by PURSE_FUZZ_TARGET.
func chosenTarget<Target: RawRepresentable & CaseIterable>(_: Target.Type) -> Target where Target.RawValue == String {
    guard let name = ProcessInfo.processInfo.environment["PURSE_FUZZ_TARGET"], let target = Target(rawValue: name) else {
        fatalError("PURSE_FUZZ_TARGET must be one of \(Target.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return target
}

/// A property every input must keep; a failure stops the run with the input saved.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("property failed: \(message())") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    fuzz(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
