extension QRCode {
    /// An SVG of the code: one path of dark modules, `border` light modules around it (the
    /// standard's quiet zone is 4).
    public func svg(border: Int = 4, darkColor: String = "#000", lightColor: String = "#fff") -> String {
        let side = size + 2 * border
        var path = ""
        for y in 0..<size {
            for x in 0..<size where self[x, y] { path += "M\(x + border),\(y + border)h1v1h-1z" }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" shape-rendering="crispEdges">\
            <rect width="100%" height="100%" fill="\(lightColor)"/><path d="\(path)" fill="\(darkColor)"/></svg>
            """
    }

    /// The code for a terminal: two module rows per text line with half blocks, light border
    /// included (dark modules print as spaces on a light cell, so it scans on dark terminals too).
    public func terminal(border: Int = 2) -> String {
        let side = size + 2 * border
        func dark(_ x: Int, _ y: Int) -> Bool {
            let mx = x - border, my = y - border
            return (0..<size).contains(mx) && (0..<size).contains(my) && self[mx, my]
        }
        var lines: [String] = []
        for y in stride(from: 0, to: side, by: 2) {
            var line = ""
            for x in 0..<side {
                switch (dark(x, y), dark(x, y + 1)) {
                case (false, false): line += "█"
                case (true, false): line += "▄"
                case (false, true): line += "▀"
                case (true, true): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// A grayscale PNG, `scale` pixels per module, `border` light modules around.
    public func png(scale: Int = 8, border: Int = 4) -> [UInt8] {
        let scale = max(1, scale), side = (size + 2 * border) * scale
        var raw: [UInt8] = []
        raw.reserveCapacity((side + 1) * side)
        for py in 0..<side {
            raw.append(0)  // filter: none
            let my = py / scale - border
            for px in 0..<side {
                let mx = px / scale - border
                let dark = (0..<size).contains(mx) && (0..<size).contains(my) && self[mx, my]
                raw.append(dark ? 0 : 255)
            }
        }
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header: [UInt8] = []
        header += PNG.bigEndian(UInt32(side)) + PNG.bigEndian(UInt32(side))
        header += [8, 0, 0, 0, 0]  // 8-bit grayscale, deflate, no filter method, no interlace
        png += PNG.chunk("IHDR", header)
        png += PNG.chunk("IDAT", PNG.zlibStored(raw))
        png += PNG.chunk("IEND", [])
        return png
    }
}

/// Just enough PNG: chunks with CRC-32 and a zlib stream of stored (uncompressed) blocks.
enum PNG {
    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
    }

    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65_535, data.count - offset)
            let final: UInt8 = offset + length == data.count ? 1 : 0
            out += [final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out += data[offset..<(offset + length)]
            offset += length
        } while offset < data.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + bigEndian(b << 16 | a)
    }
}
