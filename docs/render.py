"""Render the Matmul and Parallelism sheets as a user sees them, for the README.

    python docs/render.py            # writes docs/matmul.png and docs/parallelism.png

Builds the default workbook with sheetgen, narrows the print area of the two sheets to what
a user sees on opening them (Matmul: the table beside its chart; Parallelism: the inputs,
pairing, side-by-side comparison and verdict above the batch-size sweep), prints it to PDF
with headless LibreOffice (the forced-recalculation profile of sheetgen/libreoffice.py, so
the pictures show LibreOffice's own values, not the cached ones), finds each sheet's first
page by the footer the workbook prints ("Matmul 1 / 7") and rasterises it with poppler's
pdftoppm. With Pillow (installed
with matplotlib) the page is cropped to its used area and scaled to WIDTH pixels.
Needs LibreOffice (`soffice`), pypdf and poppler-utils (`pdftoppm`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from xlsxwriter.utility import xl_col_to_name

DOCS = Path(__file__).resolve().parent
#: sheet name -> picture written beside this script
PICTURES = {"Matmul": DOCS / "matmul.png", "Parallelism": DOCS / "parallelism.png"}
WIDTH = 1800  # px at most: reads well in a README at full width, well under 400 KB as PNG
DPI = 200  # rasterise above WIDTH's need, then scale down (sharper text than a direct render)
MARGIN = 16  # px of white kept around the used area


def fail(message: str) -> None:
    print(f"Error: {message}", file=sys.stderr)
    raise SystemExit(2)


def matmul_area(workbook: Path) -> str:
    """The Matmul table's columns and the chart right of it, down to the chart's bottom."""
    with zipfile.ZipFile(workbook) as z:
        drawing = z.read("xl/drawings/drawing1.xml").decode()
    to = re.search(r"<xdr:to><xdr:col>(\d+)</xdr:col>.*?<xdr:row>(\d+)</xdr:row>", drawing)
    if to is None:
        fail("no chart anchor in the Matmul sheet's drawing")
    return f"$A$1:${xl_col_to_name(int(to.group(1)))}${int(to.group(2)) + 1}"


def parallelism_area(workbook: Path) -> str:
    """Everything above the batch-size sweep, which (with the per-layer table) runs wide."""
    import openpyxl

    ws = openpyxl.load_workbook(workbook, read_only=True)["Parallelism"]
    last_row, last_col = 0, 1
    for row in ws.iter_rows():
        if str(row[0].value or "").startswith("Batch-size sweep"):
            break
        filled = [cell.column for cell in row if cell.value not in (None, "")]
        if filled:
            last_row, last_col = row[0].row, max(last_col, *filled)
    return f"$A$1:${xl_col_to_name(last_col - 1)}${last_row}"


def sheet_part(parts: dict[str, bytes], sheet: str) -> str:
    """The zip member holding `sheet`'s worksheet XML, through the workbook's relationships."""
    rid = re.search(rf'<sheet name="{re.escape(sheet)}"[^>]*r:id="(\w+)"',
                    parts["xl/workbook.xml"].decode())
    rels = parts["xl/_rels/workbook.xml.rels"].decode()
    target = rid and re.search(rf'Id="{rid.group(1)}"[^>]*Target="([^"]+)"', rels)
    if not target:
        fail(f"no worksheet part for sheet {sheet!r}")
    return "xl/" + target.group(1).removeprefix("/xl/")


def narrow_print_areas(workbook: Path, areas: dict[str, str], one_page: set[str]) -> None:
    """Rewrite the print area (and drop the repeated rows) of each sheet in `areas`; the
    sheets in `one_page` print portrait on a single page."""
    with zipfile.ZipFile(workbook) as z:
        parts = {name: z.read(name) for name in z.namelist()}
    xml = parts["xl/workbook.xml"].decode()
    for sheet, area in areas.items():
        ref = re.escape(f"'{sheet}'" if " " in sheet else sheet)
        xml = re.sub(rf'(<definedName name="_xlnm.Print_Area"[^>]*>){ref}![^<]*<',
                     lambda m, s=sheet, a=area: f"{m.group(1)}{s}!{a}<", xml)
        xml = re.sub(rf'<definedName name="_xlnm.Print_Titles"[^>]*>{ref}![^<]*'
                     r"</definedName>", "", xml)
    parts["xl/workbook.xml"] = xml.encode()
    for sheet in one_page:
        name = sheet_part(parts, sheet)
        page = parts[name].decode().replace('fitToHeight="0"', 'fitToHeight="1"')
        parts[name] = page.replace('orientation="landscape"', 'orientation="portrait"').encode()
    with zipfile.ZipFile(workbook, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)


def sheet_pages(pdf: Path) -> dict[str, int]:
    """Index of the first page of each sheet, read from the footer every page carries."""
    import pypdf

    first: dict[str, int] = {}
    for index, page in enumerate(pypdf.PdfReader(pdf).pages):
        footer = re.search(r"^(.+?) (\d+) / \d+", page.extract_text() or "", re.M)
        if footer:
            first.setdefault(footer.group(1).strip(), index)
    return first


def rasterise(pdf: Path, index: int, out: Path, tmp: Path) -> None:
    """Page `index` (0-based) of `pdf` as a PNG at `out`, cropped and scaled when Pillow is here."""
    stem = tmp / f"page{index}"
    subprocess.run(["pdftoppm", "-png", "-singlefile", "-r", str(DPI), "-f", str(index + 1),
                    "-l", str(index + 1), str(pdf), str(stem)], check=True)
    png = stem.with_suffix(".png")
    try:
        from PIL import Image
    except ImportError:  # no Pillow: the whole page, as rendered
        shutil.copyfile(png, out)
        return
    with Image.open(png) as page:
        page = page.convert("RGB")
        box = body_box(page)
        if box:
            left, top, right, bottom = box
            page = page.crop((max(left - MARGIN, 0), max(top - MARGIN, 0),
                              min(right + MARGIN, page.width), min(bottom + MARGIN, page.height)))
        if page.width > WIDTH:
            page = page.resize((WIDTH, round(page.height * WIDTH / page.width)),
                               Image.Resampling.LANCZOS)
        # a sheet has few colours: a 256-colour palette keeps the PNG small and looks the same
        page.quantize(256, dither=Image.Dither.NONE).save(out, optimize=True)


def body_box(page) -> tuple[int, int, int, int] | None:
    """Bounding box of the page's ink above the footer (the last band of ink, below a gap)."""
    import numpy as np

    ink = np.asarray(page.convert("L")) < 245
    rows = np.flatnonzero(ink.any(axis=1))
    if rows.size == 0:
        return None
    gaps = np.flatnonzero(np.diff(rows) > 1)
    body = rows[: gaps[-1] + 1] if gaps.size else rows  # drop the footer's band
    cols = np.flatnonzero(ink[body[0]: body[-1] + 1].any(axis=0))
    return int(cols[0]), int(body[0]), int(cols[-1]) + 1, int(body[-1]) + 1


def main() -> None:
    if shutil.which("pdftoppm") is None:
        fail("pdftoppm not found: install poppler-utils (apt-get install -y poppler-utils)")
    try:
        import pypdf  # noqa: F401
    except ImportError:
        fail("pypdf not found: pip install pypdf")
    from sheetgen.api import build_workbook
    from sheetgen.errors import SheetgenError
    from sheetgen.libreoffice import recalculate, soffice

    if soffice() is None:
        fail("LibreOffice (soffice) not found: install libreoffice-calc")
    with tempfile.TemporaryDirectory(prefix="sheetgen-render-") as name:
        tmp = Path(name)
        try:
            workbook, _ = build_workbook(tmp / "roofline.xlsx")
            narrow_print_areas(workbook, {"Matmul": matmul_area(workbook),
                                          "Parallelism": parallelism_area(workbook)},
                               one_page={"Parallelism"})
            pdf = recalculate(workbook, tmp, to="pdf", timeout=300)
        except SheetgenError as exc:
            fail(str(exc))
        pages = sheet_pages(pdf)
        for sheet, out in PICTURES.items():
            if sheet not in pages:
                fail(f"no page of sheet {sheet!r} in the PDF (found {', '.join(pages)})")
            rasterise(pdf, pages[sheet], out, tmp)
            print(f"{out.relative_to(DOCS.parent)}: sheet {sheet}, page {pages[sheet] + 1}")


if __name__ == "__main__":
    main()
