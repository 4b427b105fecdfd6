#!/usr/bin/env python3
"""The tally agreement the provider renders (the `agree` action's agree.pdf), read by pypdf:
an independent PDF reader must open it, find its pages and extract the texts given.

    chips_pdf.py FILE TEXT...
"""
import sys

from pypdf import PdfReader


def main() -> int:
    path, expected = sys.argv[1], sys.argv[2:]
    reader = PdfReader(path, strict=True)
    if not reader.pages:
        print(f"{path}: no pages", file=sys.stderr)
        return 1
    text = "\n".join(page.extract_text() for page in reader.pages)
    missing = [item for item in expected if item not in text]
    if missing:
        print(f"{path}: missing {missing}\n---\n{text}", file=sys.stderr)
        return 1
    title = (reader.metadata or {}).get("/Title")
    print(f"agree.pdf: {len(reader.pages)} page(s), title {title!r}, {len(expected)} texts found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
