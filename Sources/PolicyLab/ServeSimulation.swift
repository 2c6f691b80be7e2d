import EngineSupport
import Prefetch

/// One served item as the serving simulation sees it: its facts from its manifest and what making each of its files
/// costs on the machine modelled (`videofeed simulate calibrate --serve` measures both).
public struct ServedItem: Sendable, Equatable {
    /// One rendition: its name (the ladder box, e.g. `540x960`) and its picture size.
    public struct Rendition: Sendable, Equatable {
        public var name: String
        public var width: Int
        public var height: Int
        /// A rendition.
        public init(name: String, width: Int, height: Int) {
            self.name = name
            self.width = width
            self.height = height
        }
    }

    /// What one job costs alone on an idle machine: seconds of wall time and CPU-seconds (all its threads).
    public struct Cost: Sendable, Equatable {
        public var wall: Double
        public var cpu: Double
        /// A cost; `cpu` below `wall` counts as `wall` (a job holds its lane's core while it runs).
        public init(wall: Double, cpu: Double) {
            self.wall = max(0, wall)
            self.cpu = max(self.wall, cpu)
        }
        /// The most cores the job uses at once.
        var parallelism: Double { wall > 0 ? max(1, cpu / wall) : 1 }
    }

    /// The file's name (its public ID in the listing).
    public var name: String
    /// The renditions, in the manifest's order.
    public var renditions: [Rendition]
    /// Where each media segment starts, in seconds.
    public var segmentStarts: [Double]
    /// The item's duration in seconds.
    public var duration: Double
    /// Whether its jobs fail (a file the server cannot open: an error card).
    public var fails = false
    /// A manifest job: the plan, and every rendition's init and first segment from one pass.
    public var manifest: Cost
    /// The poster.
    public var poster: Cost
    /// A first segment (or an init) of one rendition made alone.
    public var firstSegment: Cost
    /// A later segment of one rendition.
    public var segment: Cost

    /// An item.
    public init(name: String, renditions: [Rendition], segmentStarts: [Double], duration: Double, manifest: Cost,
                poster: Cost, firstSegment: Cost, segment: Cost) {
        self.name = name
        self.renditions = renditions
        self.segmentStarts = segmentStarts.isEmpty ? [0] : segmentStarts
        self.duration = max(duration, 0.001)
        self.manifest = manifest
        self.poster = poster
        self.firstSegment = firstSegment
        self.segment = segment
    }

    /// The rendition the page plays in a box of `width` × `height` device pixels (``RenditionRule``, util.js
    /// `pickRendition`): the smallest at least as wide or as tall as the box, else the largest.
    public func rendition(forBox width: Int, _ height: Int) -> Int {
        RenditionRule.forBox(renditions.map { RenditionRule.Candidate(width: $0.width, height: $0.height) },
                             width: width, height: height) ?? 0
    }
}

/// `videofeed simulate serve`: many viewers of `videofeed serve` in virtual time, on the live server's own
/// scheduler (``ServeScheduler``) and prefetch policy, with jobs charged from calibrated costs.
///
/// The server side mirrors the live one: a viewer's move focuses its item, tells whether the item's first segment
/// was ready (a hit), and turns the policy's wanted set into prefetch wants exactly as `ViewerHub` does (a manifest
/// for an item without one; then its poster and the viewer's rendition's segments from the playhead on); a request
/// for an init or a segment first waits for the item's manifest, as the server's file handler does. Jobs run on
/// ``ServeScheduler/Rules/workers`` lanes that share ``Configuration/cores`` cores fairly, each job using at most its
/// own parallelism (its CPU-seconds over its wall time alone).
///
/// The viewers follow the page's behaviour as `scripts/serve-replay.py` replays it live ("viewer model 1": its
/// docstring is the contract): on a move, abandon what left the window, `at`, the poster and the card's fill when it
/// is pending, then init and first segment (the first frame when both are read; 0 when the viewer held them); the
/// window's neighbours once the first frame is in (or 3 s passed): posters, fills, inits and first segments, and the
/// early segments of the cards ahead, each neighbour's media waiting its turn while the current item is short; later
/// segments 4 s before the playhead needs them (a stall when one comes late); `at` with the playhead every second;
/// six connections per viewer. Listing pages are read when needed (a card is pending when its page was read before
/// its manifest was made) and cost nothing but a request. Every HTTP answer arrives
/// ``Configuration/requestSeconds`` after the server has it.
///
/// Deterministic: the same inputs give the same result.
public struct ServeSimulation: Sendable {
    /// The knobs of one run.
    public struct Configuration: Sendable {
        /// The scheduler's rules (workers, prefetch share, wide slot, holds).
        public var rules: ServeScheduler.Rules
        /// Cores the lanes share.
        public var cores: Double
        /// The viewers' display box in device pixels.
        public var box: (width: Int, height: Int)
        /// The page's window: cards attached (init and first segment fetched) ahead of and behind the current one,
        /// and posters loaded on each side (the server tells the page from its policy: `PageWindow`).
        public var ahead: Int
        public var behind: Int
        public var posters: Int
        /// Seconds an HTTP answer takes on top of the server's work (loopback: about 2 ms).
        public var requestSeconds: Double
        /// Seconds a viewer stays after its last move.
        public var tail: Double
        /// The length of a later segment (the server's grid): how far ahead a buffered stage plans.
        public var segmentSeconds: Double
        /// Items of the listing's start whose manifests the server makes as it starts, one after another, before
        /// anyone asks (serve's warm-up); the trace's time 0 is when the server listens.
        public var warmItems: Int

        /// A run with `workers` lanes on `cores` cores, the server's defaults otherwise.
        public init(workers: Int, cores: Double = 2, box: (width: Int, height: Int) = (540, 960),
                    window: PageWindow = PageWindow(ahead: 2, behind: 2, posters: 3), requestSeconds: Double = 0.002, tail: Double = 3, segmentSeconds: Double = 2,
                    warmItems: Int = 3) {
            rules = ServeScheduler.Rules(workers: workers)
            self.cores = max(0.01, cores)
            self.box = box
            ahead = max(0, window.ahead)
            behind = max(0, window.behind)
            posters = max(ahead, behind, window.posters)
            self.requestSeconds = max(0, requestSeconds)
            self.tail = max(0, tail)
            self.segmentSeconds = max(0.1, segmentSeconds)
            self.warmItems = max(0, warmItems)
        }
    }

    /// Percentiles of a list of milliseconds.
    public struct Spread: Sendable, Equatable, Codable {
        public var p50: Double
        public var p95: Double
        public var count: Int

        /// The nearest-rank p50 and p95 of `values`.
        public init(_ values: [Double]) {
            let sorted = values.sorted()
            p50 = Percentile.nearestRank(0.5, of: sorted)
            p95 = Percentile.nearestRank(0.95, of: sorted)
            count = values.count
        }
    }

    /// One viewer's figures.
    public struct ViewerResult: Sendable, Equatable, Codable {
        public var viewer: Int
        public var moves: Int
        public var firstFrameMs: Spread
        public var hitRate: Double
        public var stalls: Int

        enum CodingKeys: String, CodingKey {
            case viewer, moves, stalls
            case firstFrameMs = "first_frame_ms"
            case hitRate = "hit_rate"
        }
    }

    /// What a run predicts: per move, per viewer and overall.
    public struct Result: Sendable, Equatable, Codable {
        /// Moves whose first frame arrived.
        public var moves: Int
        /// From each move to its first frame (init and first segment in), in milliseconds.
        public var firstFrameMs: Spread
        /// The same over moves that were hits, and over misses (cold).
        public var firstFrameMsHit: Spread
        public var firstFrameMsMiss: Spread
        /// Moves whose first segment was ready when the move reached the server.
        public var hitRate: Double
        /// From a move to its pending card, and to its poster, in milliseconds.
        public var cardMs: Spread
        public var posterMs: Spread
        /// Later segments that came after the playhead needed them.
        public var stalls: Int
        /// Moves left before their first frame.
        public var unfinished: Int
        /// HTTP requests made, and those answered with an error.
        public var requests: Int
        public var errors: Int
        /// Jobs that ran, and the CPU they used over the cores available.
        public var jobs: Int
        public var cpuUse: Double
        /// The most jobs queued at once.
        public var peakQueue: Int
        /// Virtual seconds simulated.
        public var seconds: Double
        public var perViewer: [ViewerResult]
        /// Every move (viewer, time, index, hit, ready, first frame in ms or nil), when asked for.
        public var perMove: [MoveResult]?

        enum CodingKeys: String, CodingKey {
            case moves, stalls, unfinished, requests, errors, jobs, seconds
            case firstFrameMs = "first_frame_ms"
            case firstFrameMsHit = "first_frame_ms_hit"
            case firstFrameMsMiss = "first_frame_ms_miss"
            case hitRate = "hit_rate"
            case cardMs = "card_ms"
            case posterMs = "poster_ms"
            case cpuUse = "cpu_use"
            case peakQueue = "peak_queue"
            case perViewer = "per_viewer"
            case perMove = "per_move"
        }
    }

    /// One move's figures.
    public struct MoveResult: Sendable, Equatable, Codable {
        public var viewer: Int
        public var t: Double
        public var index: Int
        /// The item at `index`: its name (path in the folder).
        public var item: String
        public var hit: Bool
        public var ready: Bool
        public var firstFrameMs: Double?

        enum CodingKeys: String, CodingKey {
            case viewer, t, index, item, hit, ready
            case firstFrameMs = "first_frame_ms"
        }
    }

    let configuration: Configuration
    let items: [ServedItem]
    let policy: any PrefetchPolicy

    /// A simulation of `items` (in the listing's order) served with `policy` under `configuration`.
    public init(items: [ServedItem], policy: any PrefetchPolicy, configuration: Configuration) {
        self.items = items
        self.policy = policy
        self.configuration = configuration
    }

    /// Replays `trace` (moves to indexes past the feed wrap round it) and returns the predicted figures.
    public func run(_ trace: ViewerTrace) -> Result {
        var world = ServeWorld(items: items, policy: policy, configuration: configuration)
        return world.run(trace)
    }
}
