import Foundation
import Hummingbird
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// An open cached file, read from disk in bounded chunks as its response is written: no response holds a whole file
/// in memory, however large the file or slow the reader (the writer waits while the connection is not writable).
///
/// The descriptor stays valid if the cache evicts the file meanwhile (the name goes, the bytes stay until closed);
/// it is closed when the last response using it ends. Immutable after `init`, and `pread` does not move a shared
/// offset, so one open file can serve any number of concurrent readers.
final class CacheFile: Sendable {
    let fd: Int32
    /// Its size in bytes when opened (cache files never change once written).
    let size: Int

    /// Bytes read and written per chunk.
    static let chunk = 64 * 1024

    /// Takes ownership of `fd`; nil (and `fd` closed) when it is not a regular file.
    init?(fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return nil
        }
        self.fd = fd
        size = Int(info.st_size)
    }

    deinit { close(fd) }

    /// All of it (for the small JSON and playlist files the server reads itself).
    func readAll() -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, size - done, off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// A response body of bytes `lower...upper`, read a chunk at a time as `channel` takes them: the next chunk is
    /// read only once fewer than ``ConnectionBacklog/limit`` bytes wait for the socket, so a client that does not
    /// read holds that and one chunk of this process's memory, whatever the file's size.
    func body(_ lower: Int, _ upper: Int, backlog: ConnectionBacklog?) -> ResponseBody {
        let count = upper - lower + 1
        return ResponseBody(contentLength: count) { writer in
            var offset = lower
            let end = upper + 1
            while offset < end {
                // Each chunk is read only when the connection has room for it.
                try await backlog?.room()
                let want = min(Self.chunk, end - offset)
                var buffer = ByteBufferAllocator().buffer(capacity: want)
                var failed: Int32 = 0
                let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw -> Int in
                    while true {
                        let n = pread(self.fd, raw.baseAddress!, want, off_t(offset))
                        if n < 0 && errno == EINTR { continue }
                        if n < 0 { failed = errno }
                        return max(0, n)
                    }
                }
                // A cache file is never shorter than when it was opened; if it is, the response cannot be finished.
                guard got > 0 else { throw POSIXError(POSIXErrorCode(rawValue: failed) ?? .EIO) }
                offset += got
                // Counted here, before the writer hands it on (the event loop may take its time); the connection's
                // guard takes it off once the socket has it.
                backlog?.add(got)
                try await writer.write(buffer)
            }
            try await writer.finish(nil)
        }
    }
}
