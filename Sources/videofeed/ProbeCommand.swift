import ArgumentParser
import EngineSupport
import Foundation
import Media

/// `videofeed probe FILE...`: container and stream information, as a table or JSON.
struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Show container and stream information of media files or URLs.",
        discussion: "Exits non-zero when any input fails; each failure is one line on stderr and the other inputs are still reported."
    )

    @Argument(help: "Files or http(s) URLs to probe.")
    var inputs: [String]

    @Flag(name: .long, help: "Print JSON instead of a table.")
    var json = false

    @Option(name: .long, help: "Time limit for opening each input, in seconds.")
    var timeout: Double = 30

    struct Entry: Encodable {
        var item: String
        var info: MediaInfo?
        /// Where the shown video stream's pictures really end, read from its packets (`info.duration` is the
        /// header's claim, as ffprobe reports it); nil for a still or when it could not be read.
        var videoEnd: VideoEnd?
        var error: ErrorEntry?
    }

    struct ErrorEntry: Encodable {
        var kind: String
        var operation: String
        var message: String
    }

    @OptionGroup var policy: MediaPolicyOptions

    func validate() throws {
        try NumberRules.timeLimit(timeout, "--timeout")
    }

    func run() throws {
        var options = policy.applied(to: OpenOptions())
        options.openTimeout = timeout
        var entries: [Entry] = []
        var failures = 0
        for input in inputs {
            // Named as errors name it: a URL's user info and signed-URL secrets never reach the output.
            let item = Redaction.redacted(input)
            do {
                let file = try MediaFile(path: input, options: options)
                // A photo's orientation (EXIF) is in its frame: decode the picture to report the size it is shown at.
                let info = try file.infoWithPictureOrientation()
                let video = info.primaryVideoStream.flatMap { $0.isAttachedPicture ? nil : $0 }
                let end = try video.flatMap { try file.videoEnd(stream: $0.index) }
                entries.append(Entry(item: item, info: info, videoEnd: end))
                if !json { Console.out(ProbeTable.render(item: item, info: info, videoEnd: end)) }
            } catch {
                failures += 1
                Console.error(Console.describe(error))
                let media = error as? MediaError
                entries.append(Entry(item: item, error: ErrorEntry(
                    kind: media?.kind.rawValue ?? "other", operation: media?.operation ?? "open",
                    message: media?.message ?? String(describing: error))))
            }
        }
        if json {
            let data = try Console.jsonEncoder().encode(entries)
            Console.out(String(decoding: data, as: UTF8.self) + "\n")
        }
        if failures > 0 { throw ExitCode(1) }
    }
}

/// The human-readable probe table.
enum ProbeTable {
    /// `info` as a table; `videoEnd` adds where the video really ends beside the header's claimed duration.
    static func render(item: String, info: MediaInfo, videoEnd: VideoEnd? = nil) -> String {
        var lines = [Console.safe(item)]
        var head = "  container: \(info.container) (\(info.containerLongName))"
        head += "  duration: " + (info.duration.map { String(format: "%.3f s", $0) } ?? "unknown")
        head += "  bit rate: " + (info.bitRate.map { String(format: "%.0f kb/s", Double($0) / 1000) } ?? "unknown")
        lines.append(head)
        if let photo = info.photo {
            // A HEIC/AVIF photo: libheif decoded it upright; the container above is the picture it handed on.
            lines.append("  photo: \(photo.format) (\(photo.codec ?? "unknown codec"), brand \(photo.majorBrand)"
                + (photo.compatibleBrands.isEmpty ? "" : ", compatible " + photo.compatibleBrands.joined(separator: " "))
                + ")  \(photo.width)x\(photo.height) upright  \(photo.bitDepth)-bit"
                + (photo.hasAlpha ? "  alpha" : "") + "  decoded by libheif")
        }
        if let end = videoEnd {
            // The claim above is the header's (what ffprobe prints); this is what the packets say.
            lines.append("  video ends: " + (end.isComplete ? "" : "at least ") + String(format: "%.3f s", end.end)
                         + String(format: " (last picture at %.3f s; ", end.lastStart)
                         + "found by \(end.method.rawValue), \((end.bytesRead + 1023) / 1024) KB read)")
        }
        for s in info.streams {
            var row = "  #\(s.index) \(s.kind.rawValue): \(s.codec)"
            switch s.kind {
            case .video:
                row += "  \(s.width)x\(s.height)"
                if let pf = s.pixelFormat { row += "  \(pf)" }
                if let depth = s.bitDepth { row += "  \(depth)-bit" }
                if let fps = s.averageFrameRate.value { row += String(format: "  %.3g fps", fps) }
                row += "  (avg \(s.averageFrameRate), base \(s.baseFrameRate))"
                let anamorphic = s.sampleAspectRatio.numerator != s.sampleAspectRatio.denominator
                    && s.sampleAspectRatio.value != nil
                if anamorphic, let dar = s.displayAspectRatio {
                    row += "  SAR \(s.sampleAspectRatio.numerator):\(s.sampleAspectRatio.denominator)"
                        + " DAR \(dar.numerator):\(dar.denominator)"
                }
                if s.rotation != 0 || s.mirrored {
                    row += "  rotation \(s.rotation)°" + (s.mirrored ? " mirrored" : "")
                }
                if anamorphic || s.rotation != 0 || s.mirrored { row += "  shown \(s.displaySize)" }
                if let p = s.colorPrimaries { row += "  primaries \(p)" }
                if let t = s.colorTransfer { row += "  transfer \(t)" }
                if s.isHDR { row += "  HDR" }
                if s.isAttachedPicture { row += "  [cover picture]" }
            case .audio:
                row += "  \(s.sampleRate) Hz  \(s.channels) ch"
            default:
                break
            }
            if let d = s.duration { row += String(format: "  %.3f s", d) }
            lines.append(row)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
