import Media

/// Pixel operations on `.rgb24` ``Image``s that the Media layer does not offer: crop and paste.
enum ImageOperations {
    /// The `size` rectangle at the center of `image`.
    static func centerCrop(_ image: Image, to size: Size) -> Image {
        let w = min(size.width, image.width), h = min(size.height, image.height)
        let x0 = (image.width - w) / 2, y0 = (image.height - h) / 2
        let bpp = image.pixelFormat.bytesPerPixel
        var out = [UInt8]()
        out.reserveCapacity(w * h * bpp)
        for y in y0..<(y0 + h) {
            let start = (y * image.width + x0) * bpp
            out.append(contentsOf: image.bytes[start..<(start + w * bpp)])
        }
        return Image(width: w, height: h, pixelFormat: image.pixelFormat, bytes: out)
    }

    /// `image` scaled to `size` by nearest neighbour (for enlarging a picture of a few pixels, where nothing finer
    /// is there to keep).
    static func resizeNearest(_ image: Image, to size: Size) -> Image {
        let bpp = image.pixelFormat.bytesPerPixel
        var out = [UInt8]()
        out.reserveCapacity(size.width * size.height * bpp)
        for y in 0..<size.height {
            let row = (y * image.height / size.height) * image.width
            for x in 0..<size.width {
                let start = (row + x * image.width / size.width) * bpp
                out.append(contentsOf: image.bytes[start..<(start + bpp)])
            }
        }
        return Image(width: size.width, height: size.height, pixelFormat: image.pixelFormat, bytes: out)
    }

    /// A `columns`-wide grid of tiles on black, each tile centered in a cell of `cell` size.
    static func sheet(_ tiles: [Image], columns: Int, rows: Int, cell: Size) -> Image {
        let width = cell.width * columns, height = cell.height * rows
        var out = [UInt8](repeating: 0, count: width * height * 3)
        for (i, tile) in tiles.enumerated() where i < columns * rows && tile.pixelFormat == .rgb24 {
            let cx = (i % columns) * cell.width + max(0, (cell.width - tile.width) / 2)
            let cy = (i / columns) * cell.height + max(0, (cell.height - tile.height) / 2)
            let w = min(tile.width, cell.width), h = min(tile.height, cell.height)
            for y in 0..<h {
                let src = y * tile.width * 3
                let dst = ((cy + y) * width + cx) * 3
                out.replaceSubrange(dst..<(dst + w * 3), with: tile.bytes[src..<(src + w * 3)])
            }
        }
        return Image(width: width, height: height, pixelFormat: .rgb24, bytes: out)
    }
}
