import Foundation

/// Process-wide tuning of glibc's malloc for how decoded pictures come and go. Decoded frames and decoder buffer
/// pools are megabytes each; which setting is right depends on the workload, so each engine picks its own once.
/// Each setting is applied at its first call only (later calls do nothing), so a process picks one; every engine
/// here does. Nothing happens on other C libraries, or when the environment variable `VF_NO_MALLOPT` is set.
public enum AllocatorTuning {
    /// For a player that must stay within a memory budget: every block of 1 MiB or more is its own mapping,
    /// returned to the system when freed (`M_MMAP_THRESHOLD` = 1 MiB). Otherwise glibc serves such blocks from its
    /// heaps after the first free and keeps them, and resident memory drifts far above the budget.
    public static func returnLargeBlocks() {
        _ = returned
    }

    /// For a player within a memory budget, beside ``returnLargeBlocks()``: at most one malloc arena per active core
    /// (`M_ARENA_MAX`). glibc's default, eight per core, gives each of the player's many threads (decoder frame
    /// threads, workers, lanes) an arena of its own, and the small blocks freed into each keep their pages: over
    /// 1,000 random swipes at 256 MiB that was 347–354 MB resident, and 321–325 MB with this cap on 2 cores
    /// (docs/benchmarks.md, FeedPlayerSwipe).
    public static func fewArenas() {
        _ = fewer
    }

    /// For a batch that opens one decoder after another: blocks up to 32 MiB (glibc's maximum) come from the heap and
    /// freed memory stays there for the next item (`M_MMAP_THRESHOLD` = 32 MiB, `M_TRIM_THRESHOLD` = 256 MiB). Each
    /// new decoder then reuses pages already mapped instead of faulting in (and the kernel zeroing) fresh ones for
    /// every file.
    public static func keepLargeBlocks() {
        _ = kept
    }

    private static let returned: Void = mallopt(parameter: -3, value: 1 << 20)
    private static let fewer: Void = mallopt(parameter: -8,
                                             value: Int32(max(1, ProcessInfo.processInfo.activeProcessorCount)))
    private static let kept: Void = {
        mallopt(parameter: -3, value: 32 << 20)
        mallopt(parameter: -1, value: 256 << 20)
    }()

    /// `mallopt(M_MMAP_THRESHOLD = -3 | M_TRIM_THRESHOLD = -1 | M_PERTURB = -6 (tests) | M_ARENA_MAX = -8, value)`,
    /// looked up at run time because <malloc.h> is not in Swift's Glibc module.
    static func mallopt(parameter: Int32, value: Int32) {
        #if canImport(Glibc)
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        if getenv("VF_NO_MALLOPT") == nil, let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
            _ = unsafeBitCast(symbol, to: Mallopt.self)(parameter, value)
        }
        #endif
    }
}
