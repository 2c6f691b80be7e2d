import Foundation
import FeedPlayer
import Media
import TestSupport
import Testing

/// ``PreparationRecipe``: the one set of preparation settings the player and `simulate calibrate` share.
@Suite struct PreparationRecipeTests {
    @Test("the player's default recipe reads the header only and scales fast, with a decoder thread per core")
    func playerDefaults() {
        let recipe = PreparationRecipe.player
        #expect(recipe.openOptions.streamInfo == .header)
        #expect(recipe.openOptions.allowedFormats == MediaFile.feedFormats)
        #expect(recipe.scaling == .fast)
        #expect(recipe.decoderOptions.threadCount == ProcessInfo.processInfo.activeProcessorCount)
        #expect(recipe == FeedPlayerConfiguration().recipe)
    }

    @Test("a configuration's recipe carries its settings, and each step uses them")
    func stepsUseTheRecipe() throws {
        var configuration = FeedPlayerConfiguration()
        configuration.openOptions = OpenOptions(streamInfo: .probe)
        configuration.scaling = .accurate
        configuration.decoderThreads = 2
        configuration.displaySize = Size(width: 90, height: 160)
        configuration.pixelFormat = .rgb24
        configuration.upright = false
        let recipe = configuration.recipe
        let file = try recipe.open(TestFixtures.media("rotate90.mp4"))
        #expect(file.options == OpenOptions(streamInfo: .probe))
        let decoder = try recipe.decoder(for: file)
        #expect(decoder.options.threadCount == 2)
        let converter = recipe.converter(for: decoder)
        #expect(converter.scaling == .accurate)
        #expect(converter.pixelFormat == .rgb24)
        #expect(converter.box == Size(width: 90, height: 160))
        #expect(converter.orientation == .identity && !converter.upright)
        #expect(recipe.frames(of: decoder) != nil)
        // The player's recipe turns each frame by its own orientation: here the stream's display matrix.
        let upright = PreparationRecipe.player.converter(for: decoder)
        let frame = try #require(try decoder.nextFrame())
        #expect(upright.upright && upright.orientation(of: frame) == decoder.stream.orientation)
        #expect(decoder.stream.orientation != .identity)
        configuration.deinterlaces = false
        #expect(configuration.recipe.frames(of: decoder) == nil)
    }
}
