import Dispatch
import EngineSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Asks an http(s) server for the version of a source without downloading it: a `HEAD` request whose `ETag` (else
/// `Last-Modified`) header identifies the version. Blocks the calling thread (a batch worker, never Swift's
/// cooperative pool) for at most `timeout` seconds.
public enum RemoteStamp {
    /// `etag:<value>` or `last-modified:<value>`, or nil when the request fails or the server sends neither.
    public static func fetch(_ url: URL, timeout: Double) -> String? {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "HEAD"
        // The header value handed from URLSession's delegate queue to the waiting worker.
        let answer = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = URLSession.shared.dataTask(with: request) { _, response, _ in
            if let http = response as? HTTPURLResponse, (200..<300).contains(http.statusCode) {
                if let etag = http.value(forHTTPHeaderField: "ETag") {
                    answer.set("etag:" + etag)
                } else if let modified = http.value(forHTTPHeaderField: "Last-Modified") {
                    answer.set("last-modified:" + modified)
                }
            }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + timeout) == .timedOut {
            task.cancel()
            return nil
        }
        return answer.get()
    }
}
