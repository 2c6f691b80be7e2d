import Foundation
import Testing
@testable import Feed

@Suite("Malformed documents")
struct MalformedDocumentTests {
    func reason(_ data: Data, format: FeedFormat? = nil) -> String? {
        do {
            _ = try FeedDocumentParser(format: format, sourceName: "sample").parse(data)
            return nil
        } catch {
            guard case .malformedDocument(let source, let reason) = error, source == "sample" else { return nil }
            return reason
        }
    }

    @Test("truncated JSON is a typed error")
    func truncated() throws {
        let reason = reason(try Samples.data("malformed.json"))
        #expect(reason?.hasPrefix("not valid JSON (") == true)
        #expect(reason?.contains("The given data was not valid JSON") == false)
    }

    @Test("an object that is no listing is a typed error")
    func wrongShape() throws {
        #expect(reason(try Samples.data("wrong-shape.json"))?.contains("neither \"resources\"") == true)
    }

    @Test("other non-listings", arguments: [
        ("", nil, "the document is empty"),
        ("  \n ", nil, "the document is empty"),
        ("42", nil, "the top level is a number, not a listing"),
        (#"{"resources": 5}"#, nil, "a Cloudinary listing needs a \"resources\" array"),
        (#"{"videos": []}"#, FeedFormat.cloudinary, "a Cloudinary listing needs a \"resources\" array"),
        (#"[]"#, FeedFormat.pexels, "a Pexels listing is a JSON object, not an array"),
        (#"{"videos": [], "page": "one"}"#, nil, "\"page\" \"one\" is not a number"),
    ] as [(String, FeedFormat?, String)])
    func others(text: String, format: FeedFormat?, expected: String) {
        #expect(reason(Data(text.utf8), format: format) == expected)
    }

    @Test("an empty listing is not an error")
    func emptyListing() throws {
        #expect(try FeedDocumentParser().parse(Data("[]".utf8)).items.isEmpty)
        #expect(try FeedDocumentParser().parse(Data(#"{"resources": []}"#.utf8)).format == .cloudinary)
    }
}
