import Feed
import Media

/// Where an item's renditions live, relative to an output or cache folder: `<public_id path>.<version>`.
///
/// The version is a digest of the source's version (size and mtime, or ETag) and of every transcode setting, so a
/// new upload or new settings make a new folder and every file under one is immutable. `videofeed transcode` and
/// `videofeed serve` name folders with this one rule, so a served file and the batch's file of the same item and
/// settings sit at the same relative path.
public enum RenditionFolder {
    /// The folder of `publicID`'s renditions for the source version `stamp` under `settings`. The public ID is
    /// mapped to a safe relative path (``OutputPath/relative(for:)``): `../x` cannot leave the root.
    public static func name(for publicID: String, stamp: SourceStamp, settings: TranscodeSettings) -> String {
        let version = StableHash.short(
            "\(settings.fingerprint)|\(stamp.size ?? -1)|\(stamp.mtime ?? -1)|\(stamp.etag ?? "")")
        return OutputPath.relative(for: publicID) + "." + version
    }
}
