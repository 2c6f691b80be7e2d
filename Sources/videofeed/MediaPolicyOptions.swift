import ArgumentParser
import Media

/// The open-policy options shared by every command that opens media: `probe`, `dump`, `thumbs`, `play`.
struct MediaPolicyOptions: ParsableArguments {
    @Flag(help: """
        Open playlists and edit lists (HLS, DASH, concat/ffconcat, IMF), which read the URLs they list. Off by \
        default: untrusted playlists can name local files. Even with this flag a remote item never reaches file:.
        """)
    var allowPlaylists = false

    /// `options` with this policy applied.
    func applied(to options: OpenOptions) -> OpenOptions {
        var options = options
        options.allowsPlaylists = allowPlaylists
        return options
    }
}
