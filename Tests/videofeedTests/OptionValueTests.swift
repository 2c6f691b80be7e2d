import Foundation
import TestSupport
import Testing

/// Option values ArgumentParser parses itself (byte counts, the dwell range, the swipe script, the policy, the
/// display size): a bad one is refused while parsing, before any work, naming the option and showing its help.
@Suite struct OptionValueTests {
    let cli = TestFixtures.cli

    @Test("a bad value is a usage error (exit 2) that names the option", arguments: [
        (["play", "--budget", "lots"], "--budget"),
        (["play", "--budget", "0"], "--budget"),
        (["play", "--dwell-ms", "900-100"], "--dwell-ms"),
        (["play", "--dwell-ms", "fast"], "--dwell-ms"),
        (["play", "--swipes", "n,sideways"], "--swipes"),
        (["play", "--swipes", ","], "--swipes"),
        (["play", "--policy", "nope"], "--policy"),
        (["play", "--policy", "forward65"], "--policy"),
        (["simulate", "--budget", "64MiB,lots"], "--budget"),
        (["feed", "--max-listing-size", "2PiB"], "--max-listing-size"),
        (["feed", "--display", "1080"], "--display"),
        (["feed", "--display", "0x1920"], "--display"),
    ])
    func refused(arguments: [String], option: String) throws {
        let result = try run(cli, arguments, in: TestFixtures.root)
        #expect(result.status == 2, "\(arguments): \(result.status) \(result.stderr)")
        #expect(result.stderr.contains("Error: The value '\(arguments[2])' is invalid for '\(option) "), "\(result.stderr)")
        #expect(result.stderr.contains("Help:  \(option) "), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("good values in every spelling are accepted", arguments: [
        ["feed", "--display", "720X1280"],
        ["feed", "--max-listing-size", "1k"],
        ["feed", "--max-listing-size", "1.5GiB"],
        ["feed", "--max-listing-size", "4096"],
    ])
    func accepted(arguments: [String]) throws {
        let result = try run(cli, arguments, in: TestFixtures.root)
        #expect(result.status == 0, "\(arguments): \(result.status) \(result.stderr)")
    }

    @Test("the defaults show as written in help")
    func defaults() throws {
        let play = try run(cli, ["play", "--help"])
        let help = play.stdout.replacingOccurrences(of: "\n", with: " ")
            .split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        for shown in ["(default: 300-300)", "(default: window)", "(default: 256MiB)", "(default: 64MiB)",
                      "(default: 1080x1920)"] {
            #expect(help.contains(shown), "\(shown) missing from play --help")
        }
        let simulate = try run(cli, ["simulate", "run", "--help"])
        #expect(simulate.stdout.contains("(default: 256MiB)"))
    }
}
