import Foundation

/// Starts `python3 -u ARGUMENTS` with stdout piped and stderr discarded, and returns the process with the first line
/// it prints (servers print their address there). The caller kills the process.
func launchPython(_ arguments: [String]) throws -> (Process, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-u"] + arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    var line = Data()
    let handle = out.fileHandleForReading
    while !line.contains(UInt8(ascii: "\n")) {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        line.append(chunk)
    }
    return (process, String(decoding: line, as: UTF8.self))
}
