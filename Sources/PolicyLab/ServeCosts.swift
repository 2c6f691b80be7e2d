import Foundation

/// What `videofeed serve` spends making each artifact of an item, measured on one machine: the costs a virtual-time
/// simulation of the server charges its jobs.
///
/// Made by `videofeed simulate calibrate --serve FOLDER --out FILE`, which drives the server's own making code
/// (`ServeEngine`, one job at a time on an idle machine, each on a fresh cache) over every video of a folder, or
/// written by hand. Items not calibrated get costs from ``estimate(width:height:duration:)``.
public struct ServeCosts: Sendable, Codable, Equatable {
    /// What one job costs: the seconds it takes alone on an idle machine (`wall`) and the CPU-seconds it uses
    /// (`cpu`, all threads together: x264 and the decoder run threads, so `cpu` may exceed `wall`).
    public struct Cost: Sendable, Codable, Equatable {
        /// Seconds from start to end of the job, alone on an idle machine.
        public var wall: Double
        /// CPU-seconds (user and system, every thread) the job used.
        public var cpu: Double

        /// A cost of `wall` seconds and `cpu` CPU-seconds.
        public init(wall: Double, cpu: Double) {
            self.wall = wall
            self.cpu = cpu
        }

        /// Both parts multiplied by `factor`.
        func scaled(_ factor: Double) -> Cost { Cost(wall: wall * factor, cpu: cpu * factor) }
    }

    /// One calibrated item: its facts as its manifest lists them, and what each of its jobs cost.
    public struct Item: Sendable, Codable, Equatable {
        /// The file's name in the calibrated folder (its path relative to the folder).
        public var name: String
        /// Displayed width in pixels (upright, after rotation; square pixels).
        public var width: Int
        /// Displayed height in pixels (upright, after rotation; square pixels).
        public var height: Int
        /// Seconds the manifest lists (where the video ends).
        public var duration: Double
        /// The manifest's segment grid: the start of each media segment in seconds, the first at 0.
        public var segmentStarts: [Double]
        /// The renditions' names (their ladder boxes, e.g. `720x1280`), in the manifest's order: largest first.
        public var renditions: [String]
        /// Whether the renditions carry audio.
        public var hasAudio: Bool
        /// A cold manifest job: opening and planning the item, and one pass over its first segment's span that
        /// makes **every rendition's initialisation segment and first media segment** (`init.mp4` and `seg-0.m4s`
        /// of each), all stored with the manifest. A viewer landing on the item needs nothing else but the poster.
        public var manifest: Cost
        /// The poster job: the first picture decoded, fitted in 720 pixels of width and encoded as a JPEG.
        public var poster: Cost
        /// Segment 0 of one rendition made alone (the manifest made, that `seg-0.m4s` deleted): the rendition a
        /// 540x960 viewer's box picks (``measuredRendition``). It decodes from the item's start.
        public var firstSegment: Cost
        /// A later media segment of ``measuredRendition`` made alone (the manifest and its inits made): the mean
        /// over the segments measured (up to three, spread over the item's full-length segments).
        public var segment: Cost
        /// Mean bytes of the media segments measured for ``segment`` (segment 0's when the item has no other).
        public var segmentBytes: Int?
        /// The rendition ``firstSegment`` and ``segment`` were measured on (nil: not recorded, the 540x960 box's).
        public var measuredRendition: String?

        /// An item's facts and costs.
        public init(name: String, width: Int, height: Int, duration: Double, segmentStarts: [Double],
                    renditions: [String], hasAudio: Bool, manifest: Cost, poster: Cost, firstSegment: Cost,
                    segment: Cost, segmentBytes: Int? = nil, measuredRendition: String? = nil) {
            self.name = name
            self.width = width
            self.height = height
            self.duration = duration
            self.segmentStarts = segmentStarts
            self.renditions = renditions
            self.hasAudio = hasAudio
            self.manifest = manifest
            self.poster = poster
            self.firstSegment = firstSegment
            self.segment = segment
            self.segmentBytes = segmentBytes
            self.measuredRendition = measuredRendition
        }

        /// Displayed pixels: width × height.
        public var pixels: Int { width * height }

        /// Why these values cannot be simulated, or nil.
        func problem() -> String? {
            if width <= 0 || height <= 0 { return "\(name): width and height must be positive" }
            if !(duration.isFinite && duration > 0) { return "\(name): duration must be positive" }
            guard segmentStarts.first == 0 else { return "\(name): segmentStarts must begin with 0" }
            for (a, b) in zip(segmentStarts, segmentStarts.dropFirst()) where !(b.isFinite && b > a) {
                return "\(name): segmentStarts must increase"
            }
            if renditions.isEmpty { return "\(name): no renditions" }
            let costs = [("manifest", manifest), ("poster", poster), ("firstSegment", firstSegment),
                         ("segment", segment)]
            for (label, cost) in costs where !(cost.wall.isFinite && cost.wall >= 0 && cost.cpu.isFinite && cost.cpu >= 0) {
                return "\(name): \(label) wall and cpu must be at least 0"
            }
            if let segmentBytes, segmentBytes <= 0 { return "\(name): segmentBytes must be positive" }
            return nil
        }
    }

    /// How and where the costs were measured: host, date, build configuration, settings.
    public var source: String
    /// The measuring machine's cores.
    public var cores: Int
    /// Segment length in seconds after the first (the server's grid), for ``estimate(width:height:duration:)``.
    public var segmentSeconds: Double
    /// The first segment's length in seconds.
    public var firstSegmentSeconds: Double
    /// The calibrated items, at least one.
    public var items: [Item]

    /// A profile. The grid defaults to the server's: 1 s first segment, 2 s after.
    public init(source: String, cores: Int, segmentSeconds: Double = 2, firstSegmentSeconds: Double = 1,
                items: [Item]) {
        self.source = source
        self.cores = cores
        self.segmentSeconds = segmentSeconds
        self.firstSegmentSeconds = firstSegmentSeconds
        self.items = items
    }

    /// The item calibrated under `name`; otherwise ``estimate(width:height:duration:)`` for the given size and
    /// duration.
    public func item(named name: String, width: Int, height: Int, duration: Double) -> Item {
        items.first { $0.name == name } ?? estimate(width: width, height: height, duration: duration)
    }

    /// Costs for an item that was not calibrated, `width`×`height` displayed pixels lasting `duration` seconds.
    ///
    /// Each cost is a function of the pixel count alone: piecewise-linear between the calibrated pixel counts (items
    /// of one pixel count averaged; the points made non-decreasing by pooling adjacent violators, so a calibrated
    /// size whose costs already rise with pixels gets exactly its own costs back), and beyond the calibrated range
    /// extended along the nearest segment's slope, bounded by cost-per-pixel scaling of the nearest calibrated size (at
    /// least that below the range, at most that above it; a single item: cost per pixel). Duration does not enter the costs: a manifest job decodes its item's first segment
    /// span only, a segment job one segment's; it sets the segment grid (``firstSegmentSeconds``, then
    /// ``segmentSeconds``). So every cost is non-decreasing in pixels and in duration. Renditions, audio and
    /// segment bytes are the nearest calibrated item's by pixel count (its bytes scaled by the pixel ratio).
    /// - Precondition: the profile has at least one item.
    public func estimate(width: Int, height: Int, duration: Double) -> Item {
        precondition(!items.isEmpty, "a ServeCosts profile needs at least one item")
        let pixels = Double(max(1, width) * max(1, height))
        let byPixels = items.sorted { $0.pixels < $1.pixels }
        let nearest = byPixels.min { abs(log(Double($0.pixels) / pixels)) < abs(log(Double($1.pixels) / pixels)) }!
        func fitted(_ cost: (Item) -> Cost) -> Cost {
            Cost(wall: Self.interpolate(byPixels.map { (Double($0.pixels), cost($0).wall) }, at: pixels),
                 cpu: Self.interpolate(byPixels.map { (Double($0.pixels), cost($0).cpu) }, at: pixels))
        }
        return Item(name: "estimate-\(max(1, width))x\(max(1, height))", width: max(1, width),
                    height: max(1, height), duration: duration, segmentStarts: grid(duration: duration),
                    renditions: nearest.renditions, hasAudio: nearest.hasAudio, manifest: fitted(\.manifest),
                    poster: fitted(\.poster), firstSegment: fitted(\.firstSegment), segment: fitted(\.segment),
                    segmentBytes: nearest.segmentBytes.map { Int((Double($0) * pixels / Double(nearest.pixels)).rounded()) },
                    measuredRendition: nearest.measuredRendition)
    }

    /// The segment starts of an item lasting `duration` seconds on this profile's grid (at least one segment).
    public func grid(duration: Double) -> [Double] {
        var starts = [0.0]
        guard duration.isFinite else { return starts }
        var next = max(firstSegmentSeconds, 0.001)
        while next < duration - 1e-6, starts.count < 1_000_000 {
            starts.append(next)
            next += max(segmentSeconds, 0.001)
        }
        return starts
    }

    /// The value at `x` of the non-decreasing piecewise-linear fit through `points` (sorted by x, at least one).
    static func interpolate(_ points: [(x: Double, y: Double)], at x: Double) -> Double {
        // Points of one x averaged, then adjacent violators pooled (weighted by how many points each holds).
        var blocks: [(x: [Double], y: Double, weight: Double)] = []
        for point in points {
            if let last = blocks.last, last.x.last == point.x {
                blocks[blocks.count - 1].y = (last.y * last.weight + point.y) / (last.weight + 1)
                blocks[blocks.count - 1].weight += 1
            } else {
                blocks.append(([point.x], point.y, 1))
            }
            while blocks.count >= 2, blocks[blocks.count - 2].y > blocks[blocks.count - 1].y {
                let b = blocks.removeLast(), a = blocks.removeLast()
                blocks.append((a.x + b.x, (a.y * a.weight + b.y * b.weight) / (a.weight + b.weight), a.weight + b.weight))
            }
        }
        let fit = blocks.flatMap { block in block.x.map { ($0, block.y) } }
        let first = fit[0], last = fit[fit.count - 1]
        if x <= first.0 {
            let proportional = first.1 * x / first.0
            guard fit.count >= 2, fit[1].0 > first.0 else { return proportional }
            let slope = (fit[1].1 - first.1) / (fit[1].0 - first.0)
            return max(proportional, first.1 + slope * (x - first.0))
        }
        if x >= last.0 {
            let proportional = last.1 * x / last.0
            guard fit.count >= 2, last.0 > fit[fit.count - 2].0 else { return proportional }
            let slope = (last.1 - fit[fit.count - 2].1) / (last.0 - fit[fit.count - 2].0)
            return min(proportional, last.1 + slope * (x - last.0))
        }
        let upper = fit.firstIndex { $0.0 >= x }!
        let (x0, y0) = fit[upper - 1], (x1, y1) = fit[upper]
        return x1 == x0 ? y1 : y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    }

    /// Reads and checks a profile file.
    /// - Throws: ``PolicyLabError/unreadableFile(path:reason:)`` or ``PolicyLabError/malformedProfile(path:reason:)``
    ///   naming the file and, for a bad item, the item.
    public static func load(from url: URL) throws -> ServeCosts {
        let path = url.path
        let data = try InputFile.contents(of: path)
        let costs: ServeCosts
        do {
            costs = try JSONDecoder().decode(ServeCosts.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            let at = (context.codingPath + [key]).map(\.stringValue).joined(separator: ".")
            throw PolicyLabError.malformedProfile(path: path, reason: "missing \"\(at)\"")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let at = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw PolicyLabError.malformedProfile(path: path, reason: "wrong type at \"\(at)\"")
        } catch {
            throw PolicyLabError.malformedProfile(path: path, reason: "not JSON of the serve cost profile's shape")
        }
        if let problem = costs.problem() { throw PolicyLabError.malformedProfile(path: path, reason: problem) }
        return costs
    }

    /// Why the profile cannot be simulated, or nil.
    func problem() -> String? {
        if cores < 1 { return "cores must be at least 1" }
        if !(segmentSeconds.isFinite && segmentSeconds > 0) { return "segmentSeconds must be positive" }
        if !(firstSegmentSeconds.isFinite && firstSegmentSeconds > 0) { return "firstSegmentSeconds must be positive" }
        if items.isEmpty { return "no items" }
        return items.lazy.compactMap { $0.problem() }.first
    }

    /// The profile as pretty JSON (sorted keys).
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Writes the profile as JSON to `url`, whole or not at all: into a temporary file in the same folder, then
    /// renamed over `url`.
    /// - Throws: ``PolicyLabError/unwritableFile(path:reason:)`` naming the file.
    public func write(to url: URL) throws {
        let path = url.path
        let data: Data
        do {
            data = try json()
        } catch {
            throw PolicyLabError.unwritableFile(path: path, reason: "cannot encode: \(error)")
        }
        let folder = url.deletingLastPathComponent().path
        let temporary = folder + "/.\(url.lastPathComponent).\(getpid()).tmp"
        do {
            try data.write(to: URL(fileURLWithPath: temporary))
        } catch {
            unlink(temporary)
            throw PolicyLabError.unwritableFile(path: path, reason: (error as NSError).localizedDescription)
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw PolicyLabError.unwritableFile(path: path, reason: reason)
        }
    }
}
