import Foundation
import Media
import Feed
import Testing
@testable import Thumbnails

/// Option values, hashing and shards.
@Suite struct ParsingTests {
    @Test func framePositions() {
        #expect(FramePosition(parsing: "10%") == .fraction(0.1))
        #expect(FramePosition(parsing: "3.5s") == .seconds(3.5))
        #expect(FramePosition(parsing: "2") == .seconds(2))
        #expect(FramePosition(parsing: "AUTO") == .auto)
        for bad in ["", "-1s", "101%", "abc", "nan", "1e999s"] { #expect(FramePosition(parsing: bad) == nil, "\(bad)") }
        #expect(FramePosition.parseList("10%,50%,auto") == [.fraction(0.1), .fraction(0.5), .auto])
        #expect(FramePosition.parseList("10%,,x") == nil)
        #expect(FramePosition.fraction(0.1).description == "10%")
        #expect(FramePosition.seconds(3.5).description == "3.5s")
    }

    @Test func sheetLayouts() {
        #expect(SheetLayout(parsing: "4x3")?.positions.count == 12)
        #expect(SheetLayout(parsing: "0x3") == nil)
        #expect(SheetLayout(parsing: "4x") == nil)
        #expect(SheetLayout(parsing: "2x2")?.positions.first == .fraction(0.125))
    }

    @Test("FNV-1a matches its published test vectors")
    func stableHash() {
        #expect(StableHash.fnv1a("") == 0xcbf2_9ce4_8422_2325)
        #expect(StableHash.fnv1a("a") == 0xaf63_dc4c_8601_ec8c)
        #expect(StableHash.fnv1a("foobar") == 0x8594_4171_f739_67e8)
    }

    @Test func shardParsing() {
        #expect(Shard(parsing: "2/8") == Shard(index: 2, count: 8))
        for bad in ["8/8", "-1/4", "1/0", "1", "a/b"] { #expect(Shard(parsing: bad) == nil, "\(bad)") }
        #expect(Shard.all.cardFileName == "cards.jsonl")
        #expect(Shard(index: 1, count: 3)?.cardFileName == "cards-1-of-3.jsonl")
    }

    @Test("shards are disjoint, cover every id, and are balanced", arguments: [2, 3, 8])
    func shardsPartition(count: Int) throws {
        let ids = (0..<2000).map { "folder/item_\($0)" }
        let shards = (0..<count).compactMap { Shard(index: $0, count: count) }
        var sizes = [Int](repeating: 0, count: count)
        for id in ids {
            let owners = shards.filter { $0.contains(id) }
            #expect(owners.count == 1, "\(id)")
            sizes[owners[0].index] += 1
        }
        let fair = Double(ids.count) / Double(count)
        #expect(sizes.allSatisfy { abs(Double($0) - fair) < fair * 0.2 }, "\(sizes)")
    }

    @Test("luma statistics tell flat from detailed pictures")
    func luma() {
        let black = Media.Image(width: 4, height: 4, pixelFormat: .gray, bytes: [UInt8](repeating: 0, count: 16))
        let gray = Media.Image(width: 4, height: 4, pixelFormat: .gray, bytes: [UInt8](repeating: 128, count: 16))
        let stripes = Media.Image(width: 4, height: 4, pixelFormat: .gray,
                                  bytes: (0..<16).map { $0 % 2 == 0 ? 30 : 220 })
        #expect(LumaStatistics(black).isBlank && LumaStatistics(gray).isBlank)
        #expect(!LumaStatistics(stripes).isBlank)
        #expect(abs(LumaStatistics(stripes).mean - 125) < 0.01)
        #expect(abs(LumaStatistics(stripes).histogram.reduce(0, +) - 1) < 1e-9)
    }
}
