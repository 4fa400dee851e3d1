"""The pixels of a PNG file (8-bit RGB or RGBA, not interlaced: what a browser's
screenshot writes), decoded with the standard library alone."""

from __future__ import annotations

import struct
import zlib

__all__ = ["pixels"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def pixels(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """(width, height, every pixel as an RGB(A) tuple, row by row) of a PNG."""
    assert data.startswith(_SIGNATURE), "not a PNG"
    at, chunks, header = len(_SIGNATURE), [], b""
    while at < len(data):
        (size,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + size]
        at += 12 + size
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and not interlace, "an 8-bit RGB(A) PNG"
    step = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * step
    rows: list[bytearray] = []
    prior = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (
            stride + 1)])
        for x in range(stride):
            left = line[x - step] if x >= step else 0
            up, corner = prior[x], prior[x - step] if x >= step else 0
            line[x] = (line[x] + (0, left, up, (left + up) // 2,
                                  _paeth(left, up, corner))[kind]) & 0xFF
        rows.append(line)
        prior = line
    return width, height, [tuple(r[x:x + step]) for r in rows for x in range(0, stride, step)]
