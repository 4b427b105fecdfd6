/// A QR Code (Model 2, ISO/IEC 18004) of bytes: byte mode, versions 1–40, error correction L, M,
/// Q or H, the mask chosen by the standard's penalty rules (or given). Rendered as a module
/// matrix, SVG, PNG or terminal blocks.
public struct QRCode: Sendable, Hashable {
    public enum ErrorCorrection: Int, Sendable, CaseIterable {
        case low, medium, quartile, high

        /// The two format-information bits (not in L < M < Q < H order).
        var formatBits: Int {
            switch self {
            case .low: 1
            case .medium: 0
            case .quartile: 3
            case .high: 2
            }
        }
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case tooLong(bytes: Int, capacity: Int)
        case invalidVersion
        case invalidMask

        public var description: String {
            switch self {
            case .tooLong(let bytes, let capacity): "\(bytes) bytes do not fit in a QR code (at most \(capacity) at this error correction)"
            case .invalidVersion: "QR versions are 1 to 40"
            case .invalidMask: "QR masks are 0 to 7"
            }
        }
    }

    public let version: Int
    public let errorCorrection: ErrorCorrection
    public let mask: Int
    /// Modules per side: 17 + 4 × version.
    public let size: Int
    /// Row-major, true = dark.
    let modules: [Bool]

    /// Whether the module at column `x`, row `y` is dark.
    public subscript(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// The rows of modules, top to bottom.
    public var rows: [[Bool]] { (0..<size).map { y in Array(modules[(y * size)..<((y + 1) * size)]) } }

    /// Encodes `bytes` in the smallest version from `minVersion` that holds them.
    /// - Parameter mask: 0–7 to force one; nil chooses the one with the lowest penalty.
    public static func encode(_ bytes: some Collection<UInt8>, errorCorrection: ErrorCorrection = .medium, minVersion: Int = 1,
                              mask: Int? = nil) throws(Failure) -> QRCode {
        guard (1...40).contains(minVersion) else { throw .invalidVersion }
        if let mask, !(0...7).contains(mask) { throw .invalidMask }
        let data = Array(bytes)
        guard let version = (minVersion...40).first(where: { Self.fits(data.count, version: $0, errorCorrection) }) else {
            throw .tooLong(bytes: data.count, capacity: Self.byteCapacity(version: 40, errorCorrection))
        }
        var symbol = Symbol(version: version)
        symbol.drawFunctionPatterns(errorCorrection: errorCorrection)
        symbol.drawCodewords(Self.codewords(data, version: version, errorCorrection))
        let chosen = mask ?? symbol.bestMask(errorCorrection: errorCorrection)
        symbol.applyMask(chosen)
        symbol.drawFormatBits(errorCorrection: errorCorrection, mask: chosen)
        return QRCode(version: version, errorCorrection: errorCorrection, mask: chosen, size: symbol.size, modules: symbol.modules)
    }

    /// The text's UTF-8 bytes.
    public static func encode(text: String, errorCorrection: ErrorCorrection = .medium, minVersion: Int = 1) throws(Failure) -> QRCode {
        try encode(Array(text.utf8), errorCorrection: errorCorrection, minVersion: minVersion)
    }

    /// The most bytes a version holds at a level.
    public static func byteCapacity(version: Int, _ level: ErrorCorrection) -> Int {
        (dataCodewords(version: version, level) * 8 - 4 - countBits(version)) / 8
    }

    // MARK: Capacity (ISO/IEC 18004 Table 9)

    /// Error-correction codewords per block, [level][version].
    static let eccPerBlock: [[Int]] = [
        [0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
        [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
        [0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
        [0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
    ]
    /// Error-correction blocks, [level][version].
    static let blockCount: [[Int]] = [
        [0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
        [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
        [0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68],
        [0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81],
    ]

    /// Modules left for data and error correction once the function patterns are drawn.
    static func rawDataModules(_ version: Int) -> Int {
        var modules = (16 * version + 128) * version + 64
        if version >= 2 {
            let alignments = version / 7 + 2
            modules -= (25 * alignments - 10) * alignments - 55
            if version >= 7 { modules -= 36 }
        }
        return modules
    }

    static func totalCodewords(_ version: Int) -> Int { rawDataModules(version) / 8 }

    static func dataCodewords(version: Int, _ level: ErrorCorrection) -> Int {
        totalCodewords(version) - eccPerBlock[level.rawValue][version] * blockCount[level.rawValue][version]
    }

    /// Bits of the byte mode's character count.
    static func countBits(_ version: Int) -> Int { version <= 9 ? 8 : 16 }

    static func fits(_ count: Int, version: Int, _ level: ErrorCorrection) -> Bool {
        4 + countBits(version) + 8 * count <= dataCodewords(version: version, level) * 8
    }

    // MARK: Codewords

    /// Mode, count, data, terminator and padding; then each block's Reed–Solomon codewords;
    /// then the blocks interleaved.
    static func codewords(_ data: [UInt8], version: Int, _ level: ErrorCorrection) -> [UInt8] {
        var bits = BitBuffer()
        bits.append(0b0100, 4)
        bits.append(data.count, countBits(version))
        for byte in data { bits.append(Int(byte), 8) }
        let capacity = dataCodewords(version: version, level) * 8
        bits.append(0, min(4, capacity - bits.count))
        bits.append(0, (8 - bits.count % 8) % 8)
        var pad = 0xEC
        while bits.count < capacity {
            bits.append(pad, 8)
            pad ^= 0xEC ^ 0x11
        }
        let dataBytes = bits.bytes

        let blocks = blockCount[level.rawValue][version]
        let eccLength = eccPerBlock[level.rawValue][version]
        let total = totalCodewords(version)
        let shortBlocks = blocks - total % blocks
        let shortLength = total / blocks - eccLength
        let divisor = ReedSolomon.divisor(degree: eccLength)
        var dataBlocks: [[UInt8]] = []
        var eccBlocks: [[UInt8]] = []
        var offset = 0
        for index in 0..<blocks {
            let length = shortLength + (index < shortBlocks ? 0 : 1)
            let block = Array(dataBytes[offset..<(offset + length)])
            offset += length
            dataBlocks.append(block)
            eccBlocks.append(ReedSolomon.remainder(block, divisor: divisor))
        }
        var result: [UInt8] = []
        result.reserveCapacity(total)
        for column in 0...shortLength {
            for block in dataBlocks where column < block.count { result.append(block[column]) }
        }
        for column in 0..<eccLength {
            for block in eccBlocks { result.append(block[column]) }
        }
        return result
    }
}

/// Bits appended most significant first.
struct BitBuffer {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, _ length: Int) {
        guard length > 0 else { return }
        for shift in stride(from: length - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> shift) & 1 == 1 { bytes[count / 8] |= 0x80 >> UInt8(count % 8) }
            count += 1
        }
    }
}

/// Reed–Solomon over GF(2^8) with QR's polynomial x^8 + x^4 + x^3 + x^2 + 1.
enum ReedSolomon {
    /// α^i and log_α, from α = 2 under the field's polynomial.
    static let (exponents, logarithms): ([UInt8], [Int]) = {
        var exponents = [UInt8](repeating: 0, count: 512)
        var logarithms = [Int](repeating: 0, count: 256)
        var value = 1
        for power in 0..<255 {
            exponents[power] = UInt8(value)
            logarithms[value] = power
            value <<= 1
            if value & 0x100 != 0 { value ^= 0x11D }
        }
        for power in 255..<512 { exponents[power] = exponents[power - 255] }
        return (exponents, logarithms)
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        guard a != 0, b != 0 else { return 0 }
        return exponents[logarithms[Int(a)] + logarithms[Int(b)]]
    }

    /// The generator polynomial ∏(x − α^i), i < degree, highest power first without its leading 1.
    static func divisor(degree: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for index in 0..<degree {
                result[index] = multiply(result[index], root)
                if index + 1 < degree { result[index] ^= result[index + 1] }
            }
            root = multiply(root, 2)
        }
        return result
    }

    /// The error-correction codewords: the remainder of data · x^degree by the divisor.
    static func remainder(_ data: [UInt8], divisor: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: divisor.count)
        let divisorLogs = divisor.map { $0 == 0 ? -1 : logarithms[Int($0)] }
        for byte in data {
            let factor = byte ^ result[0]
            result.removeFirst()
            result.append(0)
            guard factor != 0 else { continue }
            let factorLog = logarithms[Int(factor)]
            for index in 0..<result.count where divisorLogs[index] >= 0 {
                result[index] ^= exponents[divisorLogs[index] + factorLog]
            }
        }
        return result
    }
}

/// The matrix being drawn: modules and which of them belong to function patterns.
struct Symbol {
    let version: Int
    let size: Int
    var modules: [Bool]
    var isFunction: [Bool]

    init(version: Int) {
        self.version = version
        size = 17 + 4 * version
        modules = [Bool](repeating: false, count: size * size)
        isFunction = [Bool](repeating: false, count: size * size)
    }

    mutating func setFunction(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    /// Alignment pattern centres for this version.
    var alignmentPositions: [Int] {
        guard version > 1 else { return [] }
        let count = version / 7 + 2
        let step = version == 32 ? 26 : (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var positions = [6]
        var position = size - 7
        while positions.count < count {
            positions.insert(position, at: 1)
            position -= step
        }
        return positions
    }

    mutating func drawFunctionPatterns(errorCorrection: QRCode.ErrorCorrection) {
        for index in 0..<size {
            setFunction(6, index, index % 2 == 0)
            setFunction(index, 6, index % 2 == 0)
        }
        for (cx, cy) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 {
                    let x = cx + dx, y = cy + dy
                    guard (0..<size).contains(x), (0..<size).contains(y) else { continue }
                    let ring = max(abs(dx), abs(dy))
                    setFunction(x, y, ring != 2 && ring != 4)
                }
            }
        }
        let positions = alignmentPositions
        for (i, cx) in positions.enumerated() {
            for (j, cy) in positions.enumerated() {
                let corner = (i == 0 && j == 0) || (i == 0 && j == positions.count - 1) || (i == positions.count - 1 && j == 0)
                guard !corner else { continue }
                for dy in -2...2 {
                    for dx in -2...2 { setFunction(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1) }
                }
            }
        }
        drawFormatBits(errorCorrection: errorCorrection, mask: 0)
        if version >= 7 {
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
            let bits = version << 12 | remainder
            for index in 0..<18 {
                let dark = (bits >> index) & 1 == 1
                let a = size - 11 + index % 3, b = index / 3
                setFunction(a, b, dark)
                setFunction(b, a, dark)
            }
        }
    }

    /// Both copies of the 15 format bits (level and mask, BCH-protected, XOR 0x5412), and the dark module.
    mutating func drawFormatBits(errorCorrection: QRCode.ErrorCorrection, mask: Int) {
        Self.forEachFormatModule(size: size, errorCorrection: errorCorrection, mask: mask) { x, y, dark in setFunction(x, y, dark) }
    }

    /// Calls `body` with the column, row and colour of every format module of a symbol of `size`.
    static func forEachFormatModule(size: Int, errorCorrection: QRCode.ErrorCorrection, mask: Int, _ body: (Int, Int, Bool) -> Void) {
        let data = errorCorrection.formatBits << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        for index in 0...5 { body(8, index, bit(index)) }
        body(8, 7, bit(6))
        body(8, 8, bit(7))
        body(7, 8, bit(8))
        for index in 9..<15 { body(14 - index, 8, bit(index)) }
        for index in 0..<8 { body(size - 1 - index, 8, bit(index)) }
        for index in 8..<15 { body(8, size - 15 + index, bit(index)) }
        body(8, size - 8, true)
    }

    /// The codewords' bits up and down two-module columns, right to left, around the function patterns.
    mutating func drawCodewords(_ codewords: [UInt8]) {
        let totalBits = codewords.count * 8
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for vertical in 0..<size {
                for offset in 0..<2 {
                    let x = right - offset
                    let upward = (right + 1) & 2 == 0
                    let y = upward ? size - 1 - vertical : vertical
                    guard !isFunction[y * size + x], index < totalBits else { continue }
                    modules[y * size + x] = (codewords[index >> 3] >> UInt8(7 - index & 7)) & 1 == 1
                    index += 1
                }
            }
            right -= 2
        }
    }

    static func masked(_ mask: Int, _ x: Int, _ y: Int) -> Bool {
        switch mask {
        case 0: (x + y) % 2 == 0
        case 1: y % 2 == 0
        case 2: x % 3 == 0
        case 3: (x + y) % 3 == 0
        case 4: (x / 3 + y / 2) % 2 == 0
        case 5: x * y % 2 + x * y % 3 == 0
        case 6: (x * y % 2 + x * y % 3) % 2 == 0
        default: ((x + y) % 2 + x * y % 3) % 2 == 0
        }
    }

    mutating func applyMask(_ mask: Int) {
        let size = size
        isFunction.withUnsafeBufferPointer { function in
            modules.withUnsafeMutableBufferPointer { cells in
                for y in 0..<size {
                    for x in 0..<size where !function[y * size + x] && Self.masked(mask, x, y) { cells[y * size + x].toggle() }
                }
            }
        }
    }

    /// The mask with the lowest penalty (the first of equals), the format bits of each drawn.
    func bestMask(errorCorrection: QRCode.ErrorCorrection) -> Int {
        size + 8 <= 128 ? bestMaskByLines(errorCorrection: errorCorrection) : bestMaskByModules(errorCorrection: errorCorrection)
    }

    /// Each mask applied to a copy of the modules and scored rule by rule: every version.
    func bestMaskByModules(errorCorrection: QRCode.ErrorCorrection) -> Int {
        var best = (mask: 0, penalty: Int.max)
        for candidate in 0..<8 {
            var trial = self
            trial.applyMask(candidate)
            trial.drawFormatBits(errorCorrection: errorCorrection, mask: candidate)
            let penalty = trial.penalty()
            if penalty < best.penalty { best = (candidate, penalty) }
        }
        return best.mask
    }

    /// The search on whole lines, for versions up to 25: the modules and the function flags are
    /// read into rows and columns of bits once; each mask is then a few word operations per
    /// line (its pattern from ``maskRows``/``maskColumns``, kept off the function modules), its
    /// format bits are set in place, and ``linePenalty(rows:columns:size:)`` scores it.
    func bestMaskByLines(errorCorrection: QRCode.ErrorCorrection) -> Int {
        let size = size
        let inside: UInt128 = ((1 << UInt128(size)) - 1) << 4
        var dataRows = [UInt128](repeating: 0, count: size), dataColumns = dataRows
        var freeRows = [UInt128](repeating: 0, count: size), freeColumns = dataRows
        modules.withUnsafeBufferPointer { cells in
            isFunction.withUnsafeBufferPointer { function in
                for y in 0..<size {
                    let rowBit: UInt128 = 1 << UInt128(y + 4)
                    for x in 0..<size {
                        let bit: UInt128 = 1 << UInt128(x + 4)
                        if cells[y * size + x] {
                            dataRows[y] |= bit
                            dataColumns[x] |= rowBit
                        }
                        if !function[y * size + x] {
                            freeRows[y] |= bit
                            freeColumns[x] |= rowBit
                        }
                    }
                }
            }
        }
        var rows = dataRows, columns = dataColumns
        var best = (mask: 0, penalty: Int.max)
        for mask in 0..<8 {
            for y in 0..<size { rows[y] = dataRows[y] ^ (Self.maskRows[mask * 12 + y % 12] & freeRows[y] & inside) }
            for x in 0..<size { columns[x] = dataColumns[x] ^ (Self.maskColumns[mask * 12 + x % 12] & freeColumns[x] & inside) }
            Self.forEachFormatModule(size: size, errorCorrection: errorCorrection, mask: mask) { x, y, dark in
                let rowBit: UInt128 = 1 << UInt128(x + 4), columnBit: UInt128 = 1 << UInt128(y + 4)
                if dark {
                    rows[y] |= rowBit
                    columns[x] |= columnBit
                } else {
                    rows[y] &= ~rowBit
                    columns[x] &= ~columnBit
                }
            }
            let penalty = Self.linePenalty(rows: rows, columns: columns, size: size)
            if penalty < best.penalty { best = (mask, penalty) }
        }
        return best.mask
    }

    /// Each mask's pattern along a row, for every row number modulo 12 (every mask repeats
    /// every 12 rows and every 12 columns): bit `x + 4` for column `x`, as the lines of
    /// ``penaltyByLines()`` hold them.
    static let maskRows: [UInt128] = (0..<96).map { index in
        (0..<124).reduce(UInt128(0)) { row, x in masked(index / 12, x, index % 12) ? row | 1 << UInt128(x + 4) : row }
    }

    /// Each mask's pattern down a column, for every column number modulo 12: bit `y + 4` for row `y`.
    static let maskColumns: [UInt128] = (0..<96).map { index in
        (0..<124).reduce(UInt128(0)) { column, y in masked(index / 12, index % 12, y) ? column | 1 << UInt128(y + 4) : column }
    }

    /// The standard's four penalty rules: runs of five or more, 2×2 blocks, finder-like
    /// 1:1:3:1:1 patterns with four light modules on a side (outside the symbol is light), and
    /// the dark/light balance.
    func penalty() -> Int {
        size + 8 <= 128 ? penaltyByLines() : penaltyByModules()
    }

    /// The rules on whole lines at once: each row and column as the bits of a `UInt128`, module
    /// `i` at bit `i + 4` (four light modules below and above), for versions up to 25.
    func penaltyByLines() -> Int {
        let size = size
        var rows = [UInt128](repeating: 0, count: size)
        var columns = [UInt128](repeating: 0, count: size)
        modules.withUnsafeBufferPointer { cells in
            rows.withUnsafeMutableBufferPointer { rows in
                columns.withUnsafeMutableBufferPointer { columns in
                    for y in 0..<size {
                        var row: UInt128 = 0
                        let rowBit: UInt128 = 1 << UInt128(y + 4)
                        for x in 0..<size where cells[y * size + x] {
                            row |= 1 << UInt128(x + 4)
                            columns[x] |= rowBit
                        }
                        rows[y] = row
                    }
                }
            }
        }
        return Self.linePenalty(rows: rows, columns: columns, size: size)
    }

    /// The four rules over rows and columns of bits (module `i` at bit `i + 4`, nothing else set).
    static func linePenalty(rows: [UInt128], columns: [UInt128], size: Int) -> Int {
        let inside: UInt128 = ((1 << UInt128(size)) - 1) << 4
        // Five or more in a row: a window of five equal modules starts at i in 4...size-1.
        let windowStarts: UInt128 = ((1 << UInt128(size - 4)) - 1) << 4
        // A 2×2 block's left module is at x in 4...size+2.
        let blockStarts: UInt128 = ((1 << UInt128(size - 1)) - 1) << 4
        var score = 0
        func line(_ r: UInt128) {
            let equalNext = ~(r ^ (r >> 1))
            let five = equalNext & (equalNext >> 1) & (equalNext >> 2) & (equalNext >> 3) & windowStarts
            score += five.nonzeroBitCount + 2 * (five & ~(five << 1)).nonzeroBitCount
            let light = ~r
            let lightFour = light & (light >> 1) & (light >> 2) & (light >> 3)
            let finder = r & ~(r >> 1) & (r >> 2) & (r >> 3) & (r >> 4) & ~(r >> 5) & (r >> 6)
            score += 40 * (finder & ((lightFour << 4) | (lightFour >> 7))).nonzeroBitCount
        }
        for r in rows { line(r) }
        for c in columns { line(c) }
        for y in 0..<(size - 1) {
            let a = rows[y], b = rows[y + 1]
            let vertical = ~(a ^ b), horizontal = ~(a ^ (a >> 1))
            score += 3 * (vertical & (vertical >> 1) & horizontal & blockStarts).nonzeroBitCount
        }
        let dark = rows.reduce(0) { $0 + ($1 & inside).nonzeroBitCount }
        return score + Self.balancePenalty(dark: dark, total: size * size)
    }

    /// The dark/light balance: 10 for every 5 % the dark share is beyond 45–55 %.
    static func balancePenalty(dark: Int, total: Int) -> Int {
        // The smallest k with (45 − 5k)% ≤ dark share ≤ (55 + 5k)%.
        max(0, (abs(dark * 20 - total * 10) + total - 1) / total - 1) * 10
    }

    /// The rules module by module, for every version.
    func penaltyByModules() -> Int {
        var score = 0
        modules.withUnsafeBufferPointer { cells in
            let size = size
            // Rules 1 and 3 along every row (step 1) and column (step size).
            for line in 0..<(2 * size) {
                let (first, step) = line < size ? (line * size, 1) : (line - size, size)
                var runColor = false, runLength = 0
                // The last 15 modules, newest in bit 0; four light modules pad each end.
                var window: UInt32 = 0
                for index in 0..<(size + 4) {
                    let dark = index < size && cells[first + index * step]
                    if index < size {
                        if dark == runColor {
                            runLength += 1
                            if runLength == 5 { score += 3 } else if runLength > 5 { score += 1 }
                        } else {
                            runColor = dark
                            runLength = 1
                        }
                    }
                    window = (window << 1 | (dark ? 1 : 0)) & 0x7FFF
                    // Dark light dark dark dark light dark, with four light before or after.
                    if (window >> 4) & 0x7F == 0x5D, (window >> 11) & 0xF == 0 || window & 0xF == 0 { score += 40 }
                }
            }
            for y in 0..<(size - 1) {
                for x in 0..<(size - 1) {
                    let at = y * size + x
                    let color = cells[at]
                    if color == cells[at + 1], color == cells[at + size], color == cells[at + size + 1] { score += 3 }
                }
            }
        }
        let dark = modules.reduce(0) { $0 + ($1 ? 1 : 0) }
        return score + Self.balancePenalty(dark: dark, total: size * size)
    }
}
