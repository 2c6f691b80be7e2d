/// The profile `videofeed simulate serve` uses without `--costs`: six items measured by
/// `videofeed simulate calibrate --serve` (release build, best of 3, one job at a time) on the 2-core AMD EPYC
/// machine docs/policylab.md describes, 2026-11-27: four real clips of ../shared/media (320x240 VP9 to a 2160x3840
/// phone clip, an HDR10 clip tone-mapped), a broadcast TS segment and the synthetic 720x1280 fixture. Other sizes are
/// estimated from them (``ServeCosts/estimate(width:height:duration:)``). Calibrate on your own machine and media for
/// figures you act on.
extension ServeCosts {
    public static let builtIn = ServeCosts(
        source: "built in: videofeed simulate calibrate --serve, release build, best of 3, 2-core AMD EPYC, 2026-11-27",
        cores: 2, segmentSeconds: 2, firstSegmentSeconds: 1, items: [
        Item(name: "bear-vp9.webm", width: 320, height: 240, duration: 2.736,
             segmentStarts: [0, 1], renditions: ["720x1280"],
             hasAudio: false, manifest: .init(wall: 0.0498, cpu: 0.0579), poster: .init(wall: 0.0062, cpu: 0.0064),
             firstSegment: .init(wall: 0.0532, cpu: 0.0605), segment: .init(wall: 0.0838, cpu: 0.1045), segmentBytes: 71454,
             measuredRendition: "720x1280"),
        Item(name: "fire2.mp4", width: 1280, height: 720, duration: 2.380,
             segmentStarts: [0, 1], renditions: ["720x1280", "540x960", "360x640"],
             hasAudio: true, manifest: .init(wall: 0.1749, cpu: 0.2639), poster: .init(wall: 0.0105, cpu: 0.0151),
             firstSegment: .init(wall: 0.0988, cpu: 0.1205), segment: .init(wall: 0.1448, cpu: 0.1899), segmentBytes: 131721,
             measuredRendition: "540x960"),
        Item(name: "hdr10-video-with-sdr-container.mp4", width: 1920, height: 1080, duration: 1.017,
             segmentStarts: [0], renditions: ["720x1280", "540x960", "360x640"],
             hasAudio: true, manifest: .init(wall: 0.5802, cpu: 0.9941), poster: .init(wall: 0.0504, cpu: 0.0601),
             firstSegment: .init(wall: 0.4120, cpu: 0.6734), segment: .init(wall: 0.4120, cpu: 0.6734), segmentBytes: 77435,
             measuredRendition: "540x960"),
        Item(name: "portrait_4k60.mp4", width: 2160, height: 3840, duration: 0.300,
             segmentStarts: [0], renditions: ["720x1280", "540x960", "360x640"],
             hasAudio: true, manifest: .init(wall: 0.7070, cpu: 1.2277), poster: .init(wall: 0.0586, cpu: 0.0810),
             firstSegment: .init(wall: 0.4106, cpu: 0.6876), segment: .init(wall: 0.4106, cpu: 0.6876), segmentBytes: 76835,
             measuredRendition: "540x960"),
        Item(name: "sd-hls0000000000.ts", width: 640, height: 360, duration: 2.500,
             segmentStarts: [0, 1], renditions: ["720x1280", "540x960", "360x640"],
             hasAudio: true, manifest: .init(wall: 0.1206, cpu: 0.1922), poster: .init(wall: 0.0054, cpu: 0.0055),
             firstSegment: .init(wall: 0.0646, cpu: 0.0814), segment: .init(wall: 0.1304, cpu: 0.1810), segmentBytes: 66138,
             measuredRendition: "540x960"),
        Item(name: "h264_portrait.mp4", width: 720, height: 1280, duration: 2.000,
             segmentStarts: [0, 1], renditions: ["720x1280", "540x960", "360x640"],
             hasAudio: true, manifest: .init(wall: 0.3622, cpu: 0.5922), poster: .init(wall: 0.0155, cpu: 0.0180),
             firstSegment: .init(wall: 0.1590, cpu: 0.2314), segment: .init(wall: 0.1746, cpu: 0.2501), segmentBytes: 117490,
             measuredRendition: "540x960"),
    ])
}
