import Feed
import Foundation

/// The temporaries rule for a shard (``BatchEngine``): remove exactly the temporaries of its own outputs.
enum BatchTemporaries {
    /// Removes every temporary `.<name>.tmp-<pid>-<n>` (a file or a staging folder) whose `<name>` is one of `names`,
    /// whatever its process id; leaves everything else, other shards' temporaries included.
    /// - Returns: the paths removed, relative to the output folder.
    @discardableResult
    static func removeOwn(in folder: OutputFolder, names: [BatchOutputName]) -> [String] {
        var byFolder: [String: [String]] = [:]
        for name in names { byFolder[name.folder, default: []].append(name.pattern) }
        var removed: [String] = []
        for (parent, patterns) in byFolder {
            let directory = parent.isEmpty ? folder.root : folder.root.appendingPathComponent(parent)
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory.path),
                  let expression = try? NSRegularExpression(
                    pattern: "^\\.(?:" + Set(patterns).sorted().joined(separator: "|") + ")\\.tmp-[0-9]+-[0-9]+$")
            else { continue }
            for entry in entries where entry.hasPrefix(".") {
                guard expression.firstMatch(in: entry, range: NSRange(entry.startIndex..., in: entry)) != nil else {
                    continue
                }
                let path = parent.isEmpty ? entry : parent + "/" + entry
                if (try? folder.removeFolder(path)) != nil { removed.append(path) }
            }
        }
        return removed
    }
}
