import Foundation
import PolicyLab

/// `videofeed simulate`'s output: a table, CSV or JSON of one row per policy (and budget).
enum ComparisonTable {
    struct Header: Encodable {
        var model: String
        var swipes: Int
        var seed: UInt64
        var costs: String
        var workers: Int
        var cores: Int
        var network: String
        var backgroundLoad: Double
    }

    private static func mib(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }

    static let columns = ["policy", "budget_mib", "swipes", "hit_rate", "ttff_p50_ms", "ttff_p95_ms", "ttff_p99_ms",
                          "stalls", "stall_s", "frames_decoded", "frames_shown", "wasted_frames", "wasted_mib",
                          "cancellations", "peak_mib"]

    private static func fields(_ m: SimulationMetrics) -> [String] {
        [m.policy, mib(m.memoryBudget), String(m.swipes), String(format: "%.4f", m.hitRate),
         String(format: "%.2f", m.timeToFirstFrameP50), String(format: "%.2f", m.timeToFirstFrameP95),
         String(format: "%.2f", m.timeToFirstFrameP99), String(m.stalls), String(format: "%.2f", m.stallSeconds),
         String(m.framesDecoded), String(m.framesShown), String(m.wastedFrames), mib(m.wastedBytes),
         String(m.cancellations), mib(m.peakDecodedBytes)]
    }

    /// RFC 4180: a field holding a comma or a quote is quoted (policy names like `window(2,2)` do).
    private static func quoted(_ field: String) -> String {
        field.contains(",") || field.contains("\"") ? "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : field
    }

    static func csv(_ rows: [SimulationMetrics]) -> String {
        ([columns.joined(separator: ",")] + rows.map { fields($0).map(quoted).joined(separator: ",") })
            .joined(separator: "\n") + "\n"
    }

    static func text(_ rows: [SimulationMetrics], header: Header) -> String {
        var out = "PolicyLab: \(header.swipes) swipes, model \(header.model), seed \(header.seed), costs \(header.costs), "
            + "\(header.workers) workers on \(header.cores) cores"
            + (header.backgroundLoad > 0 ? " shared with \(header.backgroundLoad) busy threads" : "")
            + ", \(header.network)\n\n"
        let titles = ["policy", "budget MiB", "hit %", "TTFF p50", "p95", "p99 ms", "stalls", "stall s", "decoded",
                      "wasted", "wasted MiB", "cancels", "peak MiB"]
        let table: [[String]] = rows.map { m in
            [m.policy, mib(m.memoryBudget), String(format: "%.1f", 100 * m.hitRate),
             String(format: "%.1f", m.timeToFirstFrameP50), String(format: "%.1f", m.timeToFirstFrameP95),
             String(format: "%.1f", m.timeToFirstFrameP99), String(m.stalls), String(format: "%.1f", m.stallSeconds),
             String(m.framesDecoded), String(m.wastedFrames), mib(m.wastedBytes), String(m.cancellations),
             mib(m.peakDecodedBytes)]
        }
        let widths = titles.indices.map { c in max(titles[c].count, table.map { $0[c].count }.max() ?? 0) }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { c, cell in
                c == 0 ? Console.pad(cell, widths[c])
                       : String(repeating: " ", count: max(0, widths[c] - cell.count)) + cell
            }.joined(separator: "  ")
        }
        out += line(titles) + "\n"
        for row in table { out += line(row) + "\n" }
        return out
    }

    struct Report: Encodable {
        var scenario: Header
        var results: [SimulationMetrics]
    }

    static func json(_ rows: [SimulationMetrics], header: Header) throws -> String {
        String(decoding: try Console.jsonEncoder().encode(Report(scenario: header, results: rows)), as: UTF8.self) + "\n"
    }
}
