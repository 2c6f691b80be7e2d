import Foundation

/// The result of running a program to completion.
public struct RunResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs `executable` with `arguments`, waits, and captures both output streams.
public func run(_ executable: URL, _ arguments: [String], in folder: URL? = nil) throws -> RunResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let folder { process.currentDirectoryURL = folder }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Drain both pipes concurrently so a chatty child never blocks on a full pipe.
    let group = DispatchGroup()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    DispatchQueue.global().async {
        errData = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return RunResult(status: process.terminationStatus,
                     stdout: String(decoding: outData, as: UTF8.self),
                     stderr: String(decoding: errData, as: UTF8.self))
}

/// Resident set size of this process in bytes, from /proc/self/statm.
public func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Whether the tests that need a quiet process (memory) should run: `make test` runs them alone in a second
/// `swift test` invocation with VIDEOFEED_ISOLATED=1.
public var isolatedRun: Bool { ProcessInfo.processInfo.environment["VIDEOFEED_ISOLATED"] == "1" }

/// Whether this run is a sanitizer build (`make test-sanitizers` sets VIDEOFEED_SANITIZER): resident memory then
/// counts the sanitizer's shadow and quarantine, so the memory suites leave their bounds to LeakSanitizer (which fails
/// the process on a leak at exit) and keep every other check.
public var sanitizerRun: Bool { ProcessInfo.processInfo.environment["VIDEOFEED_SANITIZER"] != nil }

/// ``run(_:_:in:)`` on a Dispatch thread: an async test waits for the program without holding a thread of Swift's
/// cooperative pool (two on a 2-core machine), which the parallel suites share.
public func runOffPool(_ executable: URL, _ arguments: [String], in folder: URL? = nil) async throws -> RunResult {
    try await offPool { try run(executable, arguments, in: folder) }
}

/// Runs blocking `work` (socket reads, a WebSocket conversation) on a Dispatch thread: an async test waits for it
/// without holding a thread of Swift's cooperative pool, which the server under test needs to answer (its handlers
/// and the viewers' hub are async). `Task.detached` is no way out: it runs on that same pool.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
