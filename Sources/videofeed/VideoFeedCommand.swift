import ArgumentParser
import Media

@main
struct VideoFeedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "videofeed",
        abstract: "VideoFeedEngine's headless tools: probe media, dump frames, list feeds, play a feed headless, make thumbnails, run the demo job.",
        subcommands: [ProbeCommand.self, DumpCommand.self, FeedCommand.self, PlayCommand.self, ThumbsCommand.self,
                      SimulateCommand.self, DemoCommand.self]
    )
}
