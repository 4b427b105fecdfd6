#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// CPU time this process has used (user + system), from `getrusage`. In-process runs it covers
/// server and load generator together: a steadier measure of cost per operation than the rate on
/// a noisy machine.
enum ProcessCPU {
    static func now() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
