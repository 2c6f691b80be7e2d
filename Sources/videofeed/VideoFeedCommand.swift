import ArgumentParser
import Media

@main
struct VideoFeedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "videofeed",
        abstract: "Headless tools of VideoFeedEngine: probe and dump video with FFmpeg.",
        subcommands: [FeedCommand.self]
    )
}
