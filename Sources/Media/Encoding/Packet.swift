package import CFFmpeg

/// An owned `AVPacket`: freed on deinit. Packets move between the encoders and the muxers of one transcode on one
/// thread, or wait in a ``MediaFile`` for its first reads; the type never leaves the Media module.
package final class Packet {
    package let raw: UnsafeMutablePointer<AVPacket>

    /// A new empty packet, or nil when memory ran out.
    package init?() {
        guard let p = av_packet_alloc() else { return nil }
        raw = p
    }

    private init(owning p: UnsafeMutablePointer<AVPacket>) { raw = p }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = raw
        av_packet_free(&p)
    }

    /// A new reference to the same data (`av_packet_clone`), or nil when memory ran out.
    package func clone() -> Packet? {
        av_packet_clone(raw).map { Packet(owning: $0) }
    }

    package var pts: Int64 { raw.pointee.pts }
    package var dts: Int64 { raw.pointee.dts }
    package var isKey: Bool { (raw.pointee.flags & vf_pkt_flag_key()) != 0 }
}

/// An owned `AVFrame`: freed on deinit.
package final class Frame {
    package let raw: UnsafeMutablePointer<AVFrame>

    package init?() {
        guard let f = av_frame_alloc() else { return nil }
        raw = f
    }

    package init(owning f: UnsafeMutablePointer<AVFrame>) { raw = f }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = raw
        av_frame_free(&f)
    }

    /// A new reference to the same picture or samples (`av_frame_clone`), or nil when memory ran out.
    package func clone() -> Frame? { av_frame_clone(raw).map { Frame(owning: $0) } }
}

/// One step of pulling from a codec or a filter graph. Expected outcomes are values, not errors.
package enum Pull<T> {
    case output(T)
    case needsInput
    case ended
}
