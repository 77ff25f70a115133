"""Makers of hostile and damaged xlsx files, small and deterministic (shared with
benchmarks/bench_hostile.py). Each writes a real zip package part by part, so a bomb is
streamed through the compressor and never held in memory here either."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from xml.sax.saxutils import escape

NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

Part = bytes | Iterable[bytes]


def sheet_xml(cells: Iterable[str], dimension: str | None = None) -> Iterator[bytes]:
    """A worksheet part from pre-serialised <c> elements, given row by row."""
    yield f'<?xml version="1.0" encoding="UTF-8"?>\n<worksheet xmlns="{NS}">'.encode()
    if dimension:
        yield f'<dimension ref="{dimension}"/>'.encode()
    yield b"<sheetData>"
    current = None
    for cell in cells:
        row = cell.split('r="', 1)[1].split('"', 1)[0].lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        if row != current:
            yield (b"</row>" if current is not None else b"") + f'<row r="{row}">'.encode()
            current = row
        yield cell.encode()
    yield (b"</row>" if current is not None else b"") + b"</sheetData></worksheet>"


def num(ref: str, value: float) -> str:
    return f'<c r="{ref}"><v>{value!r}</v></c>'


def formula(ref: str, text: str) -> str:
    return f'<c r="{ref}"><f>{escape(text)}</f></c>'


def text(ref: str, value: str) -> str:
    return f'<c r="{ref}" t="inlineStr"><is><t>{escape(value)}</t></is></c>'


def write_package(path: Path, sheets: dict[str, Part], *, names: dict[str, str] | None = None,
                  extra: dict[str, Part] | None = None, calc_pr: bool = True,
                  sheet_part: str = "xl/worksheets/sheet{i}.xml") -> Path:
    """A minimal valid xlsx: sheets in order (parts streamed), defined names, extra parts."""
    overrides = "".join(
        f'<Override PartName="/{sheet_part.format(i=i)}" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        for i in range(1, len(sheets) + 1))
    defined = "".join(f'<definedName name="{n}">{escape(t)}</definedName>'
                      for n, t in (names or {}).items())
    parts: dict[str, Part] = {
        "[Content_Types].xml": (
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats'
            '.org/package/2006/content-types"><Default Extension="rels" ContentType="applicati'
            'on/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" Conten'
            'tType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="appli'
            'cation/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            f"{overrides}</Types>").encode(),
        "_rels/.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PKG}"><Relationship'
            ' Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationsh'
            'ips/officeDocument" Target="xl/workbook.xml"/></Relationships>').encode(),
        "xl/workbook.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{NS}" xmlns:r="{REL}">'
            "<sheets>" + "".join(
                f'<sheet name="{escape(name)}" sheetId="{i}" r:id="rId{i}"/>'
                for i, name in enumerate(sheets, start=1))
            + "</sheets>" + (f"<definedNames>{defined}</definedNames>" if defined else "")
            + ('<calcPr calcId="191029"/>' if calc_pr else "") + "</workbook>").encode(),
        "xl/_rels/workbook.xml.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{PKG}">' + "".join(
                f'<Relationship Id="rId{i}" Type="{REL}/worksheet" '
                f'Target="/{sheet_part.format(i=i)}"/>' for i in range(1, len(sheets) + 1))
            + "</Relationships>").encode(),
    }
    for i, body in enumerate(sheets.values(), start=1):
        parts[sheet_part.format(i=i)] = body
    parts.update(extra or {})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, body in parts.items():
            with zf.open(name, "w", force_zip64=True) as fh:
                for chunk in ([body] if isinstance(body, bytes) else body):
                    fh.write(chunk)
    return path


def shapes_sheet(rows: Iterable[tuple[object, object, object]]) -> Iterator[bytes]:
    """A sheet with an m/k/n header and the given rows (numbers or formula text)."""
    cells = [text("A1", "m"), text("B1", "k"), text("C1", "n")]
    for r, values in enumerate(rows, start=2):
        for col, v in zip("ABC", values, strict=True):
            ref = f"{col}{r}"
            cells.append(formula(ref, v[1:]) if isinstance(v, str) else num(ref, float(v)))
    return sheet_xml(cells)


def padding(total: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """`total` bytes of XML whitespace: compresses about 1000 to 1."""
    block = b" " * chunk
    while total > 0:
        yield block[: min(chunk, total)]
        total -= chunk


def bomb_sheet(total: int) -> Iterator[bytes]:
    """A well-formed worksheet part of about `total` bytes, nearly all whitespace."""
    yield from sheet_xml([num("A1", 1.0)])
    yield from padding(total)


def encrypted_file(path: Path) -> Path:
    """The start of an OLE compound file as Office writes a password-protected xlsx: the
    CFB signature and a directory naming the EncryptionInfo stream ([MS-OFFCRYPTO])."""
    directory = "EncryptionInfo".encode("utf-16-le") + b"\0" * 50
    path.write_bytes(CFB_MAGIC + b"\0" * 504 + directory + b"\0" * 2000)
    return path


def corrupt_deflate(src: Path, dst: Path, part: str) -> Path:
    """Copy src with the compressed bytes of `part` garbled (header and sizes intact)."""
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as zf:
        info = zf.getinfo(part)
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len  # the local header's own sizes
    for i in range(start + 2, start + min(info.compress_size, 64)):
        data[i] ^= 0x5A
    dst.write_bytes(bytes(data))
    return dst


__all__ = ["bomb_sheet", "corrupt_deflate", "encrypted_file", "formula", "num", "padding",
           "shapes_sheet", "sheet_xml", "text", "write_package"]
