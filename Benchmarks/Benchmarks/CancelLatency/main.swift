// How soon Media gives up an open that a server never answers: the latency figures docs/reliability.md quotes, which
// the unit tests (CancellationTests) check only as events. A loopback listener accepts and never answers; each run
// opens `http://127.0.0.1:PORT/clip.mp4` on it and, once the connection is accepted,
//   cancel     cancels the open's token: milliseconds from the cancel to the open's return (.cancelled)
//   timeout    waits for the open time limit (0.3 s): milliseconds from the open's start to its return (.timedOut)
// and prints p50, p95 and max over RUNS runs of each (the first of each not counted: FFmpeg's network init).
//
//   CancelLatency [RUNS]        (Benchmarks/cancel-latency.sh builds and runs it; RUNS defaults to 20)
import Dispatch
import EngineSupport
import Foundation
import Media
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

let runs = CommandLine.arguments.count > 1 ? max(1, Int(CommandLine.arguments[1]) ?? 20) : 20

/// A loopback listener that accepts and never answers; `accepted` counts connections.
final class Silent: Sendable {
    let port: Int
    let accepted = Atomic<Int>(0)

    init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        listen(fd, 128)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        // Accepted connections stay open (never answered) until the process ends (so does the server).
        Thread.detachNewThread { [self] in
            while accept(fd, nil, nil) >= 0 { accepted.add(1, ordering: .releasing) }
        }
    }
}

func milliseconds(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }

func summary(_ label: String, _ values: [Double], _ kinds: [String]) {
    let sorted = values.sorted()
    func at(_ p: Double) -> Double { sorted[max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
    let ends = Dictionary(grouping: kinds, by: { $0 }).map { "\($0.key) \($0.value.count)" }.sorted().joined(separator: ", ")
    print(String(format: "%-8@ p50 %7.1f ms  p95 %7.1f ms  max %7.1f ms  (%d runs; ended: %@)", label, at(0.5), at(0.95),
                 sorted.last ?? 0, sorted.count, ends))
}

let server = Silent()
let url = "http://127.0.0.1:\(server.port)/clip.mp4"
print("CancelLatency: \(runs) runs each against a loopback server that never answers (\(url))")

var cancelMs: [Double] = [], cancelKinds: [String] = []
/// How one open ended, set on the opening thread and read after `done` is signalled.
final class Ending: @unchecked Sendable {  // written before `done.signal()`, read after `done.wait()`
    var kind = ""
}

for run in 0...runs {
    let token = CancellationToken()
    let options = { var options = OpenOptions(); options.openTimeout = 600; return options }()
    let before = server.accepted.load(ordering: .acquiring)
    let done = DispatchSemaphore(value: 0)
    let ending = Ending()
    Thread.detachNewThread {
        do {
            _ = try MediaFile(path: url, options: options, cancellation: token)
            ending.kind = "opened"
        } catch {
            ending.kind = (error as? MediaError).map { "\($0.kind)" } ?? "\(error)"
        }
        done.signal()
    }
    while server.accepted.load(ordering: .acquiring) == before { usleep(200) }
    usleep(20_000)  // let the open settle into its wait for the answer
    let cancelled = DispatchTime.now().uptimeNanoseconds
    token.cancel()
    done.wait()
    if run > 0 {
        cancelMs.append(milliseconds(since: cancelled))
        cancelKinds.append(ending.kind)
    }
}
summary("cancel", cancelMs, cancelKinds)

var timeoutMs: [Double] = [], timeoutKinds: [String] = []
for run in 0...runs {
    var options = OpenOptions()
    options.openTimeout = 0.3
    let started = DispatchTime.now().uptimeNanoseconds
    var kind = "opened"
    do { _ = try MediaFile(path: url, options: options) } catch {
        kind = (error as? MediaError).map { "\($0.kind)" } ?? "\(error)"
    }
    if run > 0 {
        timeoutMs.append(milliseconds(since: started))
        timeoutKinds.append(kind)
    }
}
summary("timeout", timeoutMs, timeoutKinds)
print("(timeout: from the open's start, with a 0.3 s open time limit)")
