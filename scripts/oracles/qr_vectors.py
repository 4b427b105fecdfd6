#!/usr/bin/env python3
"""QR Code known answers from python-qrcode (PyPI `qrcode`), an independent encoder, for `swift test`.

    pip install qrcode==8.2
    python3 scripts/oracles/qr_vectors.py Tests/PurseFormatsTests/Fixtures/qr_vectors.json

Byte-mode payloads at chosen versions, levels and masks (every level, every mask, versions
1-40, both block layouts): the module matrix python-qrcode draws, row by row as 0/1 text. Our
encoder, given the same version and mask, must draw exactly the same matrix. (zbarimg then
decodes our own PNGs in CI: scripts/oracles/qr_zbar.sh.)
"""
import json
import random
import sys
from importlib.metadata import version as package_version

import qrcode
from qrcode.exceptions import DataOverflowError
from qrcode.util import MODE_8BIT_BYTE, QRData

LEVELS = {"L": qrcode.constants.ERROR_CORRECT_L, "M": qrcode.constants.ERROR_CORRECT_M,
          "Q": qrcode.constants.ERROR_CORRECT_Q, "H": qrcode.constants.ERROR_CORRECT_H}


def main(out):
    rng = random.Random(20261124)
    cases = []
    for version in [1, 2, 3, 5, 6, 7, 9, 10, 13, 14, 20, 26, 27, 32, 35, 40]:
        for index, level in enumerate(LEVELS):
            mask = (version + index) % 8
            payload = bytes(rng.randrange(256) for _ in range(rng.randint(1, 15 if version < 3 else 120)))
            code = qrcode.QRCode(version=version, error_correction=LEVELS[level], border=0, mask_pattern=mask)
            code.add_data(QRData(payload, mode=MODE_8BIT_BYTE))
            try:
                code.make(fit=False)
            except DataOverflowError:
                continue
            rows = ["".join("1" if cell else "0" for cell in row) for row in code.get_matrix()]
            cases.append({"payload": payload.hex(), "version": version, "level": level, "mask": mask, "rows": rows})
    with open(out, "w") as f:
        json.dump({"generator": f"qrcode {package_version('qrcode')}", "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main(sys.argv[1])
