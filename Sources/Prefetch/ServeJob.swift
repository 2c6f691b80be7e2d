/// What one job makes for one item.
public enum Artifact: Hashable, Sendable, CustomStringConvertible {
    /// The item's listing facts (the server's item manifest) and every rendition's initialisation segment.
    case manifest
    /// The card's poster image.
    case poster
    /// One rendition's initialisation segment.
    case initialization(rendition: Int)
    /// Media segment `index` of rendition `rendition`.
    case segment(rendition: Int, index: Int)
    /// Media segment `index` of every rendition, from one pass (for native players that read every variant).
    case segments(index: Int)
    /// Every output of a batch run: the fast-start MP4s, the previews, all segments and playlists.
    case full

    public var description: String {
        switch self {
        case .manifest: "manifest"
        case .poster: "poster"
        case .initialization(let r): "init(r\(r))"
        case .segment(let r, let k): "seg(r\(r),\(k))"
        case .segments(let k): "seg(all,\(k))"
        case .full: "full"
        }
    }

    /// The order requests run in when several wait (lower first, then the order they were asked for): posters —
    /// what the viewer sees first, and the cheapest job (a tenth of a second against half a second to a second for a
    /// manifest or a first segment) — before everything else. With 20 viewers arriving together, a poster queued
    /// behind other viewers' first segments waits 5–7 s. Manifests keep the rank of segments: ranked before them,
    /// the first segments would wait behind every new item's manifest, and more requests take over 5 s.
    public var requestRank: Int {
        switch self {
        case .poster: 0
        case .manifest, .initialization, .segment, .segments, .full: 1
        }
    }

    /// Whether the job encodes every rendition at once (a manifest with every first segment, a full run): one x264
    /// encoder per rendition, each holding its look-ahead frames (about 150 MB for the default three renditions),
    /// where a segment job holds one. ``ServeScheduler/Rules/wideWorkers`` bounds how many run together.
    public var isWide: Bool {
        switch self {
        case .manifest, .segments, .full: true
        case .poster, .initialization, .segment: false
        }
    }

    /// What a viewer needs before the item shows: its manifest, poster, an init or the first media segment.
    public var isFirstLook: Bool {
        switch self {
        case .manifest, .poster, .initialization: true
        case .segment(_, let index): index == 0
        case .segments, .full: false
        }
    }
}

/// One unit of work: an artifact of the item whose renditions live in `folder` (``RenditionFolder``).
public struct JobKey: Hashable, Sendable, CustomStringConvertible {
    /// The item's folder in the cache.
    public var folder: String
    /// What to make.
    public var artifact: Artifact

    /// The job making `artifact` for the item in `folder`.
    public init(folder: String, artifact: Artifact) {
        self.folder = folder
        self.artifact = artifact
    }

    public var description: String { "\(folder) \(artifact)" }
}
