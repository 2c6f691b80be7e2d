import Prefetch
import Prometheus

/// The server's Prometheus metrics (`GET /metrics`): prefetch hits and misses, work made, served and cancelled, the
/// queue, the cache and the viewers.
public final class ServeMetrics: Sendable {
    /// The registry `/metrics` emits.
    public let registry = PrometheusCollectorRegistry()

    /// Swipes whose new item's first segment was ready when the swipe arrived.
    let prefetchHits: Counter
    /// Swipes whose new item's first segment was not ready.
    let prefetchMisses: Counter
    /// Media segments made (on demand or ahead; the first segments a manifest job makes included).
    let segmentsTranscoded: Counter
    /// Other jobs made: manifests, posters, full runs.
    let otherJobsMade: Counter
    /// Media files served (200 and 206).
    let filesServed: Counter
    /// Segments served.
    let segmentsServed: Counter
    /// Media requests that waited for work (a job, or the engine's checks off the request's task), not answered from
    /// the cache at once.
    let mediaWaits: Counter
    /// Jobs cancelled or dropped because nobody wanted them any more.
    let jobsCancelled: Counter
    /// Jobs that failed.
    let jobsFailed: Counter
    /// Seconds spent in segment jobs (a manifest job, which makes its item's first segments too, counts with the
    /// other jobs, so this over `segmentsTranscoded` understates the time per segment). A counter, not
    /// swift-prometheus's `ValueHistogram`, whose bucket array is never freed (LeakSanitizer).
    let segmentSeconds: Counter
    /// Jobs waiting for a worker.
    let queueDepth: Gauge
    /// Jobs being made.
    let running: Gauge
    /// Bytes in the cache (this process's count).
    let cacheBytes: Gauge
    /// Connected viewers.
    let viewers: Gauge
    /// Times a watched source was read again.
    let listingReads: Counter
    /// Times a read of a watched source found it changed.
    let listingChanges: Counter
    /// Items arrived, removed and changed in a watched source.
    let itemsAdded: Counter
    let itemsRemoved: Counter
    let itemsChanged: Counter

    /// Metrics in a new registry.
    public init() {
        prefetchHits = registry.makeCounter(descriptor: Self.name("videofeed_prefetch_hits_total", help: "Swipes to an item whose first segment was ready"))
        prefetchMisses = registry.makeCounter(descriptor: Self.name("videofeed_prefetch_misses_total", help: "Swipes to an item whose first segment was not ready"))
        segmentsTranscoded = registry.makeCounter(descriptor: Self.name("videofeed_segments_transcoded_total", help: "Media segments made, on demand or ahead, first segments made with a manifest included"))
        otherJobsMade = registry.makeCounter(descriptor: Self.name("videofeed_other_jobs_total", help: "Manifests, posters, initialisation segments and full runs made"))
        filesServed = registry.makeCounter(descriptor: Self.name("videofeed_files_served_total", help: "Media files served"))
        segmentsServed = registry.makeCounter(descriptor: Self.name("videofeed_segments_served_total", help: "Media segments served"))
        mediaWaits = registry.makeCounter(descriptor: Self.name("videofeed_media_waits_total", help: "Media requests not answered from the cache at once"))
        jobsCancelled = registry.makeCounter(descriptor: Self.name("videofeed_jobs_cancelled_total", help: "Jobs dropped or cancelled because nobody wanted them"))
        jobsFailed = registry.makeCounter(descriptor: Self.name("videofeed_jobs_failed_total", help: "Jobs that failed"))
        segmentSeconds = registry.makeCounter(descriptor: Self.name(
            "videofeed_segment_seconds_total", help: "Seconds spent in segment jobs (manifest jobs, which also make first segments, not included)"))
        queueDepth = registry.makeGauge(descriptor: Self.name("videofeed_queue_depth", help: "Jobs waiting for a worker"))
        running = registry.makeGauge(descriptor: Self.name("videofeed_jobs_running", help: "Jobs being made"))
        cacheBytes = registry.makeGauge(descriptor: Self.name("videofeed_cache_bytes", help: "Bytes in the disk cache"))
        viewers = registry.makeGauge(descriptor: Self.name("videofeed_viewers", help: "Connected viewers"))
        listingReads = registry.makeCounter(descriptor: Self.name("videofeed_listing_reads_total", help: "Times the watched source was read again"))
        listingChanges = registry.makeCounter(descriptor: Self.name("videofeed_listing_changes_total", help: "Reads of the watched source that found it changed"))
        itemsAdded = registry.makeCounter(descriptor: Self.name("videofeed_items_added_total", help: "Items that arrived in the watched source"))
        itemsRemoved = registry.makeCounter(descriptor: Self.name("videofeed_items_removed_total", help: "Items removed from the watched source"))
        itemsChanged = registry.makeCounter(descriptor: Self.name("videofeed_items_changed_total", help: "Items of the watched source replaced by a new version"))
    }

    /// A descriptor for `name` (`videofeed_…`, its last part the unit when it is one).
    static func name(_ name: String, help: String) -> MetricNameDescriptor {
        var parts = name.split(separator: "_").map(String.init)
        let namespace = parts.removeFirst()
        let unit = ["total", "seconds", "bytes"].contains(parts.last ?? "") ? parts.removeLast() : ""
        return MetricNameDescriptor(namespace: namespace, metricName: parts.joined(separator: "_"), unitName: unit,
                                    helpText: help)
    }

    /// Records how a job ended.
    func record(_ key: JobKey, _ outcome: WorkPool.Outcome) {
        switch outcome {
        case .made(let seconds):
            if case .segment = key.artifact {
                segmentsTranscoded.increment()
                segmentSeconds.increment(by: seconds)
            } else {
                otherJobsMade.increment()
            }
        case .cancelled: jobsCancelled.increment()
        case .failed: jobsFailed.increment()
        }
    }
}
