import EngineSupport
import Testing

/// ``Redaction``: the one way the engine names a URL — what it removes from signed-URL shapes, and what it keeps.
@Suite struct RedactionTests {
    @Test("signed-URL secrets are replaced, the rest of the URL reads as given", arguments: [
        // AWS SigV4 (S3 presigned): signature, credential and session token; algorithm, date, expiry stay.
        ("https://bucket.s3.amazonaws.com/clip.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20260101"
            + "&X-Amz-Date=20260101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host"
            + "&X-Amz-Security-Token=FQoGZX&X-Amz-Signature=ab12cd",
         "https://bucket.s3.amazonaws.com/clip.mp4?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED"
            + "&X-Amz-Date=20260101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host"
            + "&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED"),
        // GCS V4 signed URL.
        ("https://storage.googleapis.com/b/clip.mp4?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.iam"
            + "&X-Goog-Signature=0f0e",
         "https://storage.googleapis.com/b/clip.mp4?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=REDACTED"
            + "&X-Goog-Signature=REDACTED"),
        // CloudFront canned and custom policies.
        ("https://d1.cloudfront.net/clip.mp4?Expires=1767225600&Signature=Abc~d__&Key-Pair-Id=K2JCJMDEHXQW5F",
         "https://d1.cloudfront.net/clip.mp4?Expires=1767225600&Signature=REDACTED&Key-Pair-Id=REDACTED"),
        ("https://d1.cloudfront.net/clip.mp4?Policy=eyJTdGF0ZW1lbnQi&Signature=x&Key-Pair-Id=K",
         "https://d1.cloudfront.net/clip.mp4?Policy=REDACTED&Signature=REDACTED&Key-Pair-Id=REDACTED"),
        // Azure SAS: only sig is the secret.
        ("https://acct.blob.core.windows.net/c/clip.mp4?sv=2022-11-02&se=2026-01-01&sr=b&sp=r&sig=q%2Bw%3D",
         "https://acct.blob.core.windows.net/c/clip.mp4?sv=2022-11-02&se=2026-01-01&sr=b&sp=r&sig=REDACTED"),
        // Cloudinary: API credentials in a query, and the path signature of a signed delivery URL.
        ("https://api.cloudinary.com/v1_1/demo/resources/video?api_key=1234&api_secret=abcd&signature=ef01&max=10",
         "https://api.cloudinary.com/v1_1/demo/resources/video?api_key=REDACTED&api_secret=REDACTED"
            + "&signature=REDACTED&max=10"),
        ("https://res.cloudinary.com/demo/video/upload/s--Ab12Cd34--/w_320/v1/clip.mp4",
         "https://res.cloudinary.com/demo/video/upload/s--REDACTED--/w_320/v1/clip.mp4"),
        // Generic names, in any case; user info; a fragment's parameters.
        ("http://user:pa%40ss@host:8080/a/clip.mp4?TOKEN=t&Access_Token=a&key=k&ApiKey=x&password=p&secret=s&auth=z"
            + "&x-api-key=h&page=2#access_token=frag",
         "http://host:8080/a/clip.mp4?TOKEN=REDACTED&Access_Token=REDACTED&key=REDACTED&ApiKey=REDACTED"
            + "&password=REDACTED&secret=REDACTED&auth=REDACTED&x-api-key=REDACTED&page=2#access_token=REDACTED"),
        ("http://127.0.0.1:9/clip.mp4?X-Amz-Signature=abc&token=xyz",
         "http://127.0.0.1:9/clip.mp4?X-Amz-Signature=REDACTED&token=REDACTED"),
        // Akamai token authentication (issue 33: it reached cards, error bodies and the log).
        ("https://cdn.example.com/v/clip.mp4?hdnts=exp=1767225600~acl=/v/*~hmac=0a1b2c&w=1",
         "https://cdn.example.com/v/clip.mp4?hdnts=REDACTED&w=1"),
        ("https://cdn.example.com/v/clip.mp4?__hdnea__=st=1~exp=2~hmac=3",
         "https://cdn.example.com/v/clip.mp4?__hdnea__=REDACTED"),
        // URLs inside a message: each one is redacted, the words around them kept.
        ("clip: open failed: https://cdn.example.com/c.mp4?hdnts=exp=1~hmac=2 (HTTP 403), then "
            + "'http://u:p@h/x?token=t'",
         "clip: open failed: https://cdn.example.com/c.mp4?hdnts=REDACTED (HTTP 403), then 'http://h/x?token=REDACTED'"),
    ])
    func signedURLs(url: String, expected: String) {
        #expect(Redaction.redacted(url) == expected)
        // Redacting twice changes nothing: a name that went through one layer can go through another.
        #expect(Redaction.redacted(expected) == expected)
    }

    @Test("paths, public ids and URLs without secrets are unchanged", arguments: [
        "/media/clip.mp4", "clips/a?token=b.mp4", "https://host/clip.mp4?page=2&w=320&author=me",
        "https://host/s--short--/clip.mp4", "file:///media/a%20b.mp4", "",
    ])
    func unchanged(text: String) {
        #expect(Redaction.redacted(text) == text)
    }

    @Test("parameter names are matched case-insensitively and percent-decoded")
    func names() {
        for name in ["X-AMZ-SIGNATURE", "x-amz-signature", "Sig", "KEY-PAIR-ID", "API%5Fkey", "subscription_key"] {
            #expect(Redaction.isSecretParameter(name), "\(name)")
        }
        for name in ["X-Amz-SignedHeaders", "X-Amz-Date", "Expires", "page", "design", "monkey", "w", "author"] {
            #expect(!Redaction.isSecretParameter(name), "\(name)")
        }
    }
}
