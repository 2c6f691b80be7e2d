/// FNV-1a, 64 bit, over UTF-8: the same value for the same text in every process, on every machine — unlike
/// Swift's `hashValue`, which is seeded per process.
public enum StableHash {
    /// The 64-bit FNV-1a hash of `text`'s UTF-8 bytes.
    public static func fnv1a(_ text: String) -> UInt64 { fnv1a(bytes: text.utf8) }

    /// The 64-bit FNV-1a hash of `bytes`.
    public static func fnv1a<Bytes: Sequence<UInt8>>(bytes: Bytes) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// The first 8 hex digits of ``fnv1a(_:)``.
    public static func short(_ text: String) -> String {
        let hex = String(fnv1a(text), radix: 16)
        return String((String(repeating: "0", count: 16 - hex.count) + hex).prefix(8))
    }
}
