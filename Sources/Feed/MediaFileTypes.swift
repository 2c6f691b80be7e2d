/// The file extensions (lower case, without a dot) a ``DirectoryFeedLoader`` lists.
public enum MediaFileTypes {
    /// Common video containers.
    public static let video: Set<String> = [
        "mp4", "m4v", "mov", "mkv", "webm", "avi", "ts", "mts", "m2ts", "mpg", "mpeg", "flv", "wmv", "3gp", "ogv",
    ]
    /// Common audio files (shown with their cover art).
    public static let audio: Set<String> = ["mp3", "m4a", "aac", "flac", "wav", "ogg", "oga", "opus"]
    /// Common still images.
    public static let image: Set<String> = [
        "jpg", "jpeg", "png", "gif", "webp", "heic", "heif", "avif", "bmp", "tif", "tiff",
    ]
    /// Video, audio and images together: the default.
    public static let all: Set<String> = video.union(audio).union(image)
}
