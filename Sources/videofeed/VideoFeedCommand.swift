import ArgumentParser
import Foundation
import Media

/// The `videofeed` command. Every subcommand exits by one rule: 0 when everything worked, 1 when some items failed
/// (each named on stderr) while the others were done, 2 when the command could not run at all (a bad option, a
/// feed that cannot be read, an output folder that cannot be written).
///
/// The root is async: `serve` and `feed` run on Swift concurrency as they are (``AsyncParsableCommand``). The others
/// drive engines that block their own threads (the player, the batches, the demo) and run synchronously on the main
/// thread, which is not one of the concurrency pool's; the few async calls they make go through ``BlockingTask``.
@main
struct VideoFeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "videofeed",
        abstract: "VideoFeedEngine's headless tools: probe media, dump frames, list feeds, play a feed headless, make thumbnails, run the demo job.",
        discussion: "Exit status: 0 all good, 1 some items failed (the others were done), 2 could not run.",
        subcommands: [ProbeCommand.self, DumpCommand.self, FeedCommand.self, PlayCommand.self, ThumbsCommand.self,
                      SimulateCommand.self, TranscodeCommand.self, ServeCommand.self, DemoCommand.self]
    )

    /// Parses and runs, mapping argument errors to exit status 2 (ArgumentParser's own is 64).
    static func main() async {
        // SVT-AV1 (AV1 renditions) writes a dozen lines to stderr for every encoder it opens unless its level says
        // errors only. Set here, before any thread, since setenv is not safe beside another thread's getenv.
        setenv("SVT_LOG", "1", 0)
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let bad = UsageRules.clusteredShortOption(in: arguments) {
            Console.error("unknown option '\(Console.safe(bad))'; to name a file that starts with '-', write ./\(Console.safe(bad)) or put -- before it")
            Foundation.exit(ExitStatus.couldNotRun)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.couldNotRun)
            }
            exit(withError: error)
        }
    }
}

/// The exit statuses every subcommand uses.
enum ExitStatus {
    /// Some items failed; the others were done.
    static let someFailed: Int32 = 1
    /// The command could not run: a bad option, an unreadable feed, an output folder that cannot be written.
    static let couldNotRun: Int32 = 2
}

/// Command-line checks ArgumentParser does not make.
enum UsageRules {
    /// The first argument (before any `--`) that looks like several short options run together, such as
    /// `-dash.mp4`: ArgumentParser would read it as `-d -a -s -h …` and print help (exit 0) for a file name. None
    /// of videofeed's short options is meant to be combined, so such an argument is refused.
    static func clusteredShortOption(in arguments: [String]) -> String? {
        for argument in arguments {
            if argument == "--" { return nil }
            guard argument.hasPrefix("-"), !argument.hasPrefix("--"), argument.count > 2,
                  Double(argument) == nil else { continue }
            return argument
        }
        return nil
    }
}
