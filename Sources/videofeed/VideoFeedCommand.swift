import ArgumentParser
import Media

@main
struct VideoFeedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "videofeed",
        abstract: "VideoFeedEngine's headless tools: probe media, dump frames, run the demo job.",
        subcommands: [ProbeCommand.self, DumpCommand.self, DemoCommand.self]
    )
}
