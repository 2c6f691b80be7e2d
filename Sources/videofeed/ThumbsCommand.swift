import ArgumentParser

/// `videofeed thumbs`: the thumbnail batch (`run`, the default) and `merge` of per-shard card files.
struct ThumbsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbs",
        abstract: "Thumbnails and cards for every item of a feed: parallel, incremental, shardable.",
        subcommands: [ThumbsRunCommand.self, ThumbsMergeCommand.self],
        defaultSubcommand: ThumbsRunCommand.self
    )
}
