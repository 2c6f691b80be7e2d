import Foundation
#if FUZZING
import CFuzzDriver
#endif

/// With `-DFUZZING -sanitize=fuzzer,address` (scripts/fuzz.sh): hands control to libFuzzer, which calls ``fuzzOne(_:)``
/// with each input. Without: replays each file given on the command line (findings, the corpus) through the same path.
@main
enum FuzzMain {
    static func main() throws {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            if let data { fuzzOne(UnsafeRawBufferPointer(start: data, count: size)) }
            return 0
        })
        #else
        for path in CommandLine.arguments.dropFirst() {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            data.withUnsafeBytes { fuzzOne($0) }
            print("ok \(path)")
        }
        #endif
    }
}

#if FUZZING
/// libFuzzer's callback by its C name, for the fuzzer runtime's own `main` when the linker picks that one.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    if let data { fuzzOne(UnsafeRawBufferPointer(start: data, count: size)) }
    return 0
}
#endif
