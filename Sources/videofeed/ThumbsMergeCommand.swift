import ArgumentParser
import Foundation
import Thumbnails

/// `videofeed thumbs merge --out DIR`: joins OUT/cards-<i>-of-<n>.jsonl into OUT/cards.jsonl.
struct ThumbsMergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Join the per-shard card files of OUT into OUT/cards.jsonl."
    )

    @Option(help: "The output folder the shards wrote into.")
    var out: String

    func run() throws {
        do {
            let count = try CardFile.merge(in: URL(fileURLWithPath: out))
            Console.out("thumbs merge: \(count) cards in \((out as NSString).appendingPathComponent("cards.jsonl"))\n")
        } catch {
            Console.error("thumbs merge: \(Console.describe(error))")
            throw ExitCode(ExitStatus.couldNotRun)
        }
    }
}
