internal import CFFmpeg

/// Copies the planes of a scaled frame into tight rows, applying an ``Orientation`` on the way.
enum Reorient {
    static func pack(_ frame: UnsafeMutablePointer<AVFrame>, format: PixelFormat, size: Size,
                     orientation: Orientation) -> [UInt8] {
        let outW = orientation.swapsAxes ? size.height : size.width
        let outH = orientation.swapsAxes ? size.width : size.height
        let count = format.byteCount(width: outW, height: outH)
        let planes = format.planeSizes(width: size.width, height: size.height)
        let bpp = format.bytesPerPixel
        // Every byte is written below (each plane is a permutation of its source pixels), so the buffer is not
        // zeroed first: that would touch every byte of every frame twice.
        return [UInt8](unsafeUninitializedCapacity: count) { dst, initialized in
            var offset = 0
            for (index, plane) in planes.enumerated() {
                let planeBytes = plane.width * plane.height * bpp
                let stride = Int(withUnsafeBytes(of: frame.pointee.linesize) { $0.load(fromByteOffset: index * 4, as: Int32.self) })
                if let src = withUnsafeBytes(of: frame.pointee.data, { $0.load(fromByteOffset: index * 8, as: UnsafeMutablePointer<UInt8>?.self) }) {
                    copy(from: src, stride: stride, width: plane.width, height: plane.height, bytesPerPixel: bpp,
                         to: dst.baseAddress! + offset, orientation: orientation)
                } else {
                    (dst.baseAddress! + offset).initialize(repeating: 0, count: planeBytes)
                }
                offset += planeBytes
            }
            initialized = count
        }
    }

    /// Writes a `width`×`height` plane so that stored pixel (x, y) lands where the orientation puts it.
    private static func copy(from src: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, height: Int,
                             bytesPerPixel bpp: Int, to dst: UnsafeMutablePointer<UInt8>, orientation: Orientation) {
        if orientation == .identity {
            for y in 0..<height {
                (dst + y * width * bpp).update(from: src + y * stride, count: width * bpp)
            }
            return
        }
        let m = orientation.matrix
        let outW = orientation.swapsAxes ? height : width
        // x' = a·x + c·y + tx, y' = b·x + d·y + ty, translated into [0, outW) × [0, outH).
        let tx = (m.a < 0 ? width - 1 : 0) + (m.c < 0 ? height - 1 : 0)
        let ty = (m.b < 0 ? width - 1 : 0) + (m.d < 0 ? height - 1 : 0)
        // Destination offset of stored (x, y) = (y'·outW + x')·bpp, linear in x and y.
        let stepX = (m.b * outW + m.a) * bpp
        let stepY = (m.d * outW + m.c) * bpp
        let origin = (ty * outW + tx) * bpp
        for y in 0..<height {
            let row = src + y * stride
            var d = origin + y * stepY
            if bpp == 1 {
                for x in 0..<width {
                    dst[d] = row[x]
                    d += stepX
                }
            } else {
                for x in 0..<width {
                    let s = row + x * bpp
                    for k in 0..<bpp { dst[d + k] = s[k] }
                    d += stepX
                }
            }
        }
    }
}
