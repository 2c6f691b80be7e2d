import EngineSupport
import Feed
import Logging
import ServiceLifecycle

// The server's parts besides Hummingbird's own, each a service of the one group ``FeedServer/run(onListening:)``
// runs. A graceful shutdown (SIGTERM, SIGINT or ``FeedServer/shutDownGracefully()``) stops them in the reverse of
// their order in the group: the warm-up at once, then the source's watch, then the HTTP server (no new connection;
// requests under way are answered, their work still running), and the engine's pool last. Cancelling the task that
// runs the group stops them all at once.

/// The engine's worker pool: shut down (running jobs cancelled, none started) once everything before it in the group
/// has stopped, or when the group is cancelled.
struct EngineService: Service {
    let engine: ServeEngine

    func run() async throws {
        // Returns at this service's turn in a graceful shutdown; throws when the group is cancelled.
        try? await gracefulShutdown()
        engine.shutdown()
    }
}

/// The first items of the listing prepared (manifest, then what the manifest's job makes) before the first viewer
/// comes. Done, it ends without ending the group (``ServiceGroupConfiguration/ServiceConfiguration`` `.ignore`); a
/// shutdown cancels what is left of it.
struct WarmUpService: Service {
    let engine: ServeEngine
    let count: Int
    let logger: Logger

    func run() async throws {
        let engine = self.engine, count = self.count, logger = self.logger
        await cancelWhenGracefulShutdown {
            do {
                for index in 0..<count {
                    try Task.checkCancellation()
                    guard let entry = try await engine.catalog.entry(at: index) else { break }
                    _ = try? await engine.manifest(for: entry)
                }
            } catch is CancellationError {
            } catch {
                logger.warning("feed: \(Redaction.redacted(String(describing: error)))")
            }
        }
    }
}

/// The watch of the feed's source, followed until shutdown (``FeedServer/follow(_:engine:hub:logger:)``): the watch
/// is stopped at this service's turn, which ends its wait. A watch that ends otherwise (stopped by its owner) ends
/// only this service, not the server (``ServiceGroupConfiguration/ServiceConfiguration`` `.ignore`).
struct SourceFollowService: Service {
    let watch: SourceWatch
    let engine: ServeEngine
    let hub: ViewerHub
    let logger: Logger

    func run() async throws {
        let watch = self.watch
        await withGracefulShutdownHandler {
            await FeedServer.follow(watch, engine: engine, hub: hub, logger: logger)
        } onGracefulShutdown: {
            watch.stop()
        }
        watch.stop()
    }
}

/// The group of a running server, for ``FeedServer/shutDownGracefully()`` from outside it: a shutdown asked for
/// before the group exists is carried out as soon as it does.
final class GracefulStop: Sendable {
    private let state = Locked<(group: ServiceGroup?, asked: Bool)>((nil, false))

    /// Records `group` as the running one; true when a shutdown was asked for before it.
    func started(_ group: ServiceGroup) -> Bool {
        state.withLock { s in
            s.group = group
            return s.asked
        }
    }

    /// The group ended: a later run starts afresh.
    func ended() { state.withLock { $0 = (nil, false) } }

    /// Asks the running group (or the next) to shut down gracefully.
    func ask() async {
        let group = state.withLock { s -> ServiceGroup? in
            s.asked = true
            return s.group
        }
        await group?.triggerGracefulShutdown()
    }
}
