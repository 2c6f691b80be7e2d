import EngineSupport
import Batch
import Foundation

/// Shows batch progress on stderr: a bar with count, rate and ETA redrawn in place on a terminal, a plain line every
/// five seconds otherwise, nothing when disabled. Called from worker threads; its state is behind a `Locked`.
final class ProgressReporter: Sendable {
    private struct State {
        var lastDraw = 0.0
        var drewBar = false
    }

    private let enabled: Bool
    private let terminal: Bool
    private let state = Locked(State())

    /// The command named at the start of a plain line.
    private let label: String

    init(enabled: Bool, label: String = "thumbs") {
        self.enabled = enabled
        self.label = label
        self.terminal = isatty(STDERR_FILENO) == 1
    }

    /// Where a batch stands: items to do, done, failed, seconds so far.
    typealias Progress = BatchProgress

    func update(_ p: Progress) {
        guard enabled else { return }
        let interval = terminal ? 0.1 : 5.0
        let text: String? = state.withLock { s in
            guard p.elapsed - s.lastDraw >= interval || p.done == p.total else { return nil }
            s.lastDraw = p.elapsed
            s.drewBar = terminal
            return terminal ? Self.bar(p) : Self.plain(p, label: label)
        }
        if let text { FileHandle.standardError.write(Data(text.utf8)) }
    }

    /// Ends the bar's line.
    func finish() {
        // Once: a second call (an error path, then a defer) prints nothing.
        guard enabled, state.withLock({ s in defer { s.drewBar = false }; return s.drewBar }) else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private static func rate(_ p: Progress) -> (perSecond: Double, eta: Int) {
        let rate = p.elapsed > 0 ? Double(p.done) / p.elapsed : 0
        return (rate, rate > 0 ? Int((Double(p.total - p.done) / rate).rounded()) : 0)
    }

    static func bar(_ p: Progress) -> String {
        let width = 30
        let filled = p.total > 0 ? p.done * width / p.total : width
        let (perSecond, eta) = rate(p)
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        return String(format: "\r[%@] %d/%d  %.1f/s  ETA %d:%02d  %d failed ", bar, p.done, p.total, perSecond,
                      eta / 60, eta % 60, p.failed)
    }

    static func plain(_ p: Progress, label: String = "thumbs") -> String {
        let (perSecond, eta) = rate(p)
        return String(format: "%@: %d/%d done, %d failed, %.1f/s, ETA %d s\n", label, p.done, p.total, p.failed,
                      perSecond, eta)
    }
}
