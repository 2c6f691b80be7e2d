import ArgumentParser
import Dispatch
import EngineSupport
import Feed
import Foundation

/// `--watch` and `--refresh`, shared by `thumbs` and `transcode`.
struct WatchOptions: ParsableArguments {
    /// Seconds between periodic looks at the source when `--refresh` is not given.
    static let defaultRefresh = 10.0

    @Flag(help: """
        Stay up after the first run and run again whenever the source changes: new items are done, gone ones' \
        outputs removed, replaced ones redone; a file still being written waits until it is complete. SIGTERM or \
        SIGINT finishes the items in hand, writes the records and exits 0. Not with --shard.
        """)
    var watch = false

    @Option(help: """
        With --watch, seconds between looks at the source: a listing URL is asked again (If-None-Match / \
        If-Modified-Since), a folder rescanned besides inotify's events. Default: 10, as for serve.
        """)
    var refresh: Double?

    /// The seconds between looks: `--refresh`, else ``defaultRefresh``.
    var refreshSeconds: Double { refresh ?? Self.defaultRefresh }

    func validate() throws {
        guard let refresh else { return }
        guard watch else { throw ValidationError("--refresh only applies with --watch.") }
        guard refresh >= 0.1, refresh <= 86_400 else {
            throw ValidationError("--refresh must be a number of seconds from 0.1 to 86400 (a day).")
        }
    }

    /// Refuses `--watch` for a shard: a scheduler runs shards, each to its end, and merges them after; a shard that
    /// never ends would never be merged.
    func check(shard: Shard) throws {
        guard watch, shard.count > 1 else { return }
        throw ValidationError("""
            --watch runs the whole feed in one process and cannot be combined with --shard or a shard index from \
            the environment ($JOB_COMPLETION_INDEX, $SLURM_ARRAY_TASK_ID): sharded runs are started by a scheduler \
            and each runs to its end.
            """)
    }
}

/// What SIGTERM and SIGINT ask of a watching batch command: the work in hand stops taking more (a batch takes no new
/// item, a wait for a change ends), then the command exits 0. A second signal ends the process at once. Its state is
/// behind a ``Locked``.
final class WatchStop: Sendable {
    private struct State {
        /// The first signal received.
        var signal: Int32?
        /// Stops the work in hand.
        var current: (@Sendable () -> Void)?
    }

    private let state = Locked(State())
    private let watch: SourceWatch

    init(watch: SourceWatch) {
        self.watch = watch
    }

    /// The first signal received, nil while none was.
    var receivedSignal: Int32? { state.withLock { $0.signal } }

    /// Whether a signal asked the command to stop.
    var isRequested: Bool { receivedSignal != nil }

    /// A signal arrived: stop the work in hand and the watch. A second one exits at once with 128 + its number, as
    /// a process killed by it would: the files written are whole and the record file trails by about a second, as
    /// after any crash.
    func request(_ signal: Int32) {
        let (first, current) = state.withLock { s -> (Bool, (@Sendable () -> Void)?) in
            guard s.signal == nil else { return (false, nil) }
            s.signal = signal
            return (true, s.current)
        }
        guard first else {
            Console.error("\(Self.name(signal)) again: exiting without waiting for the items in hand")
            _exit(128 + signal)
        }
        current?()
        watch.stop()
    }

    /// Runs `body` with `stop` as the way a signal stops it; when a signal came already, `stop` is called first.
    func during<Value>(_ stop: @escaping @Sendable () -> Void, _ body: () throws -> Value) rethrows -> Value {
        let already = state.withLock { s -> Bool in
            s.current = stop
            return s.signal != nil
        }
        defer { state.withLock { $0.current = nil } }
        if already { stop() }
        return try body()
    }

    /// `body` under `watchStop` when there is one (``during(_:_:)``), else simply `body`.
    static func during<Value>(_ watchStop: WatchStop?, _ stop: @escaping @Sendable () -> Void,
                              _ body: () throws -> Value) rethrows -> Value {
        guard let watchStop else { return try body() }
        return try watchStop.during(stop, body)
    }

    /// Runs async `work` to its end from this (blocking) thread, as ``BlockingTask`` does; a signal cancels it. Only
    /// for work that ends promptly when cancelled (a sleep): a listing read is left to end by its own timeouts, and a
    /// wait for a change is ended by ``SourceWatch/stop()``.
    func perform<Value: Sendable>(_ work: @escaping @Sendable () async throws -> Value) -> Result<Value, any Error> {
        let box = Locked<Result<Value, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task.detached {
            do {
                box.set(.success(try await work()))
            } catch {
                box.set(.failure(error))
            }
            done.signal()
        }
        during({ task.cancel() }) { done.wait() }
        // The task always sets a result before it signals, so nil here can only be a bug.
        guard let result = box.get() else { preconditionFailure("WatchStop: signalled without a result") }
        return result
    }

    /// `SIGTERM`, `SIGINT` or `signal N`.
    static func name(_ signal: Int32) -> String {
        switch signal {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        default: "signal \(signal)"
        }
    }

    /// Routes SIGTERM and SIGINT to `handler` through Dispatch sources instead of their default action (ending the
    /// process), whatever the process is doing: waiting for a change or running a batch. Keep the sources.
    static func handleSignals(_ handler: @escaping @Sendable (Int32) -> Void) -> [any DispatchSourceSignal] {
        [SIGTERM, SIGINT].map { number in
            // The default action would end the process before the source sees the signal.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }
}

/// What `thumbs` and `transcode` do with a listing, once or, with `--watch`, at every change of the source.
struct BatchJob {
    /// `thumbs` or `transcode`: the first word of every message.
    var command: String
    /// `--allow-empty-feed`.
    var allowEmptyFeed: Bool
    /// `--quiet`: no line saying the command watches.
    var quiet: Bool
    /// How many items the output folder's record file lists now (for the empty-listing refusal).
    var previousCount: () -> Int
    /// Runs the batch over a listing, reports it (failures on stderr, the summary on stdout) and returns whether
    /// anything failed (an item or a listing entry). A ``WatchStop`` is given in watch mode: the batch must run under
    /// it (``WatchStop/during(_:_:_:)``). Throws `ExitCode(2)`, reported, when the batch could not run at all (the
    /// output folder cannot be written, another run holds it).
    var pass: (_ page: FeedPage, _ stop: WatchStop?) throws -> Bool

    /// One run: the whole listing is read before the output folder is touched; exit 2 when it cannot be (or is
    /// empty without `--allow-empty-feed`), 1 when anything failed.
    /// Runs once, or watches when `options` say `--watch`.
    func run(_ source: FeedSourceOptions, format: FeedFormat?, options: WatchOptions) throws {
        if options.watch {
            try watch(source, format: format, refresh: options.refreshSeconds)
        } else {
            try once(source, format: format)
        }
    }

    func once(_ source: FeedSourceOptions, format: FeedFormat?) throws {
        let page = try BatchCommandSupport.loadListing(source, format: format, command: command)
        try BatchCommandSupport.refuseEmptyListing(page, allowEmptyFeed: allowEmptyFeed,
                                                   previousCount: previousCount, command: command)
        if try pass(page, nil) { throw ExitCode(ExitStatus.someFailed) }
    }

    /// Runs, then runs again at every change of the source until SIGTERM or SIGINT, then returns (exit 0).
    ///
    /// A look at the source that finds the listing of the last batch again, when nothing failed in it, runs no
    /// batch. A pass whose listing cannot be read changes nothing and is tried again after `refresh` seconds; a
    /// listing refused as empty waits for the next change; an item that fails is
    /// reported and the watch goes on. The first batch that cannot run (the output folder cannot be written, another
    /// run holds it) ends the command with exit 2; a later one is reported and tried again like an unreadable listing.
    func watch(_ source: FeedSourceOptions, format: FeedFormat?, refresh: Double) throws {
        let loader: any FeedLoader
        let watch: SourceWatch
        do {
            (loader, watch) = try source.makeWatchedLoader(format: format, for: .batch, refresh: refresh)
        } catch {
            Console.error("\(command): cannot read the feed: \(Console.describe(error)); nothing in the output folder "
                          + "was changed")
            throw ExitCode(ExitStatus.couldNotRun)
        }
        let stop = WatchStop(watch: watch)
        let signals = WatchStop.handleSignals { stop.request($0) }
        defer { signals.forEach { $0.cancel() } }
        if !quiet {
            Console.error("\(command): watching \(Console.safe(source.source ?? "the bundled feed")) (looked at again "
                          + "every \(refresh) s); SIGTERM or SIGINT stops after the items in hand")
        }
        var batches = 0
        // The listing of the last batch that had nothing fail: the same listing again (a folder's periodic rescan
        // finds nothing new) needs no batch. After a failure the next look runs one, which retries the failed items.
        var lastClean: Set<FeedItem>?
        // This pass could not run for a reason that may pass by itself (a listing that did not answer, a folder
        // another run held): look again after `refresh` seconds even if the source does not change.
        var retrySoon = false
        let retryNote = "\(command): will try again in \(refresh) s"
        repeat {
            retrySoon = false
            guard !stop.isRequested else { break }
            // Not cancelled by a signal: it ends by its own timeouts (--timeout, --retries), then the loop stops.
            let loaded = BlockingTask.run { try await loader.loadAll(maxPages: BatchCommandSupport.maxPages) }
            guard !stop.isRequested else { break }
            let page: FeedPage
            do {
                page = try BatchCommandSupport.listing(loaded, command: command)
            } catch {
                Console.error(retryNote)
                retrySoon = true
                continue
            }
            let listed = Set(page.items)
            if page.skipped.isEmpty && listed == lastClean { continue }
            do {
                try BatchCommandSupport.refuseEmptyListing(page, allowEmptyFeed: allowEmptyFeed,
                                                           previousCount: previousCount, command: command)
            } catch {
                Console.error("\(command): will try again at the next change of the source")
                continue
            }
            do {
                let failed = try pass(page, stop)
                batches += 1
                lastClean = failed ? nil : listed
            } catch let exit as ExitCode where exit.rawValue == ExitStatus.couldNotRun && batches > 0 {
                Console.error(retryNote)
                retrySoon = true
            }
        } while !stop.isRequested && waitForChange(watch, stop: stop, retryAfter: retrySoon ? refresh : nil)
        if let signal = stop.receivedSignal, !quiet {
            Console.error("\(command): stopped by \(WatchStop.name(signal)); items not reached are left for the next "
                          + "run")
        }
    }

    /// Waits until the source may have changed (a signal ends the wait through ``SourceWatch/stop()``), or, with
    /// `retryAfter`, just that many seconds; false when a signal stopped the watch.
    private func waitForChange(_ watch: SourceWatch, stop: WatchStop, retryAfter: Double?) -> Bool {
        if let retryAfter {
            // The listing is read again after it, so a change meanwhile is not missed.
            _ = stop.perform { try await Task.sleep(nanoseconds: UInt64(retryAfter * 1e9)) }
            return !stop.isRequested
        }
        switch BlockingTask.run({ await watch.next() }) {
        case .success(let changed): return changed && !stop.isRequested
        case .failure: return false
        }
    }
}
