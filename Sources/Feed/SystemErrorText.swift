import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Words a person can act on for the errors Foundation throws, whose own descriptions on Linux are often
/// "The operation could not be completed. (NSCocoaErrorDomain error 512.)" or "URL error -1".
public enum SystemErrorText {
    /// The cause of `error` in words: the POSIX error underneath a Foundation file error (`Not a directory`,
    /// `No space left on device`), a URL error's meaning, or the error's own description.
    public static func reason(_ error: any Error) -> String {
        if let urlError = error as? URLError { return reason(urlError) }
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying !== ns {
            return reason(underlying)
        }
        if ns.domain == NSCocoaErrorDomain, let path = ns.userInfo[NSFilePathErrorKey] as? String,
           let blocker = fileInTheWay(of: path) {
            return "Not a directory: \(blocker) is a file where a folder is needed"
        }
        if ns.domain == NSCocoaErrorDomain {
            switch ns.code {
            case NSFileNoSuchFileError, NSFileReadNoSuchFileError: return "no such file or folder"
            case NSFileReadNoPermissionError, NSFileWriteNoPermissionError: return "permission denied"
            case NSFileWriteOutOfSpaceError: return "no space left on the device"
            case NSFileWriteVolumeReadOnlyError: return "the file system is read-only"
            case NSFileWriteFileExistsError: return "a file of that name exists"
            case NSFileReadCorruptFileError: return "the file is not in the expected format"
            case NSFileReadInapplicableStringEncodingError: return "the file is not valid UTF-8 text"
            case NSFileReadTooLargeError: return "the file is too large"
            default: break
            }
        }
        let text = ns.localizedDescription
        if text.contains("NSCocoaErrorDomain") || text.isEmpty {
            return "a file operation failed (Foundation error \(ns.code))"
        }
        return text
    }

    /// The nearest existing folder on the way to `path` (its parent or above) when that is a file rather than a
    /// folder: the usual cause of a file or folder that cannot be created there.
    static func fileInTheWay(of path: String) -> String? {
        var current = URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent()
        while current.path != "/" {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: current.path, isDirectory: &isFolder) {
                return isFolder.boolValue ? nil : current.path
            }
            current = current.deletingLastPathComponent()
        }
        return nil
    }

    /// A URL error's meaning.
    static func reason(_ error: URLError) -> String {
        switch error.code {
        case .timedOut: return "the server did not answer in time"
        case .cancelled: return "cancelled"
        case .networkConnectionLost: return "the connection was lost"
        case .cannotConnectToHost: return "cannot connect to the host (nothing listens there, or a firewall refuses)"
        case .cannotFindHost, .dnsLookupFailed: return "the host name was not found"
        case .notConnectedToInternet: return "no network connection"
        case .badServerResponse, .cannotParseResponse: return "the server's answer is not valid HTTP"
        case .secureConnectionFailed: return "the TLS connection could not be made"
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
             .serverCertificateHasUnknownRoot: return "the server's TLS certificate is not trusted"
        case .httpTooManyRedirects: return "too many redirects"
        case .redirectToNonExistentLocation: return "a redirect to nowhere"
        case .badURL: return "the URL is not valid"
        case .unsupportedURL: return "the URL's scheme cannot be fetched, or the answer is not HTTP"
        case .zeroByteResource: return "the answer has no body"
        case .cannotDecodeContentData, .cannotDecodeRawData: return "the answer's body cannot be decoded"
        case .dataLengthExceedsMaximum: return "the answer is larger than allowed"
        case .userAuthenticationRequired, .userCancelledAuthentication: return "the server asks for credentials"
        default:
            if let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError {
                return reason(underlying)
            }
            return "the request failed below HTTP (URL error \(error.code.rawValue))"
        }
    }
}
