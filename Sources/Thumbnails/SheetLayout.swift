/// A contact sheet's grid: `columns`×`rows` tiles taken at evenly spaced times.
public struct SheetLayout: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Tiles per row.
    public var columns: Int
    /// Rows of tiles.
    public var rows: Int

    /// A grid of `columns`×`rows` (each 1…16).
    public init?(columns: Int, rows: Int) {
        guard (1...16).contains(columns), (1...16).contains(rows) else { return nil }
        self.columns = columns
        self.rows = rows
    }

    /// Parses `CxR`, e.g. `4x4`.
    public init?(parsing text: String) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let c = Int(parts[0]), let r = Int(parts[1]) else { return nil }
        self.init(columns: c, rows: r)
    }

    /// The positions of the tiles, in reading order: the middles of `columns·rows` equal spans of the item.
    public var positions: [FramePosition] {
        let n = columns * rows
        return (0..<n).map { .fraction((Double($0) + 0.5) / Double(n)) }
    }

    /// `CxR`.
    public var description: String { "\(columns)x\(rows)" }
}
