/// What an image file says about itself in its first bytes: its format and its size in pixels.
/// Read before an image is stored, so a file that claims to be a JPEG or PNG is one, and a
/// picture's size is bounded without decoding it. Every read is bounds-checked; a truncated or
/// malformed header reads as nil.
public struct ImageHeader: Equatable, Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case jpeg = "image/jpeg"
        case png = "image/png"
        case gif = "image/gif"

        /// The MIME type's usual file extension.
        public var fileExtension: String {
            switch self {
            case .jpeg: "jpeg"
            case .png: "png"
            case .gif: "gif"
            }
        }
    }

    public var format: Format
    public var width: Int
    public var height: Int

    public init(format: Format, width: Int, height: Int) {
        self.format = format
        self.width = width
        self.height = height
    }

    /// The header of `bytes`, or nil when they are not a JPEG, PNG or GIF image with a size.
    public static func read(_ bytes: [UInt8]) -> ImageHeader? {
        if bytes.starts(with: [0xFF, 0xD8]) { return jpeg(bytes) }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return png(bytes) }
        if bytes.starts(with: Array("GIF87a".utf8)) || bytes.starts(with: Array("GIF89a".utf8)) { return gif(bytes) }
        return nil
    }

    /// A PNG's size is in its first chunk, which must be `IHDR`.
    private static func png(_ bytes: [UInt8]) -> ImageHeader? {
        guard bytes.count >= 24, Array(bytes[12..<16]) == Array("IHDR".utf8) else { return nil }
        let width = bigEndian(bytes, at: 16, count: 4), height = bigEndian(bytes, at: 20, count: 4)
        guard let width, let height, width > 0, height > 0, width <= Int(Int32.max), height <= Int(Int32.max) else { return nil }
        return ImageHeader(format: .png, width: width, height: height)
    }

    /// A GIF's logical screen size, little-endian after the signature.
    private static func gif(_ bytes: [UInt8]) -> ImageHeader? {
        guard bytes.count >= 10 else { return nil }
        let width = Int(bytes[6]) | Int(bytes[7]) << 8, height = Int(bytes[8]) | Int(bytes[9]) << 8
        guard width > 0, height > 0 else { return nil }
        return ImageHeader(format: .gif, width: width, height: height)
    }

    /// A JPEG's size is in its start-of-frame segment: the segments before it are walked by
    /// their lengths, up to the start of the scan.
    private static func jpeg(_ bytes: [UInt8]) -> ImageHeader? {
        var index = 2
        while index < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            var marker = index + 1
            while marker < bytes.count, bytes[marker] == 0xFF { marker += 1 } // fill bytes
            guard marker < bytes.count else { return nil }
            let code = bytes[marker]
            index = marker + 1
            switch code {
            case 0x01, 0xD0...0xD7: continue // markers without a segment
            case 0xD9, 0xDA: return nil // end of image, or the scan, before any frame
            default: break
            }
            guard let length = bigEndian(bytes, at: index, count: 2), length >= 2 else { return nil }
            if [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF].contains(code) {
                guard length >= 7, let height = bigEndian(bytes, at: index + 3, count: 2),
                      let width = bigEndian(bytes, at: index + 5, count: 2), width > 0, height > 0 else { return nil }
                return ImageHeader(format: .jpeg, width: width, height: height)
            }
            index += length
        }
        return nil
    }

    private static func bigEndian(_ bytes: [UInt8], at offset: Int, count: Int) -> Int? {
        guard offset >= 0, offset <= bytes.count - count else { return nil }
        return bytes[offset..<(offset + count)].reduce(0) { $0 << 8 | Int($1) }
    }
}
