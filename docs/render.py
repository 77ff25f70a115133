"""Render the Matmul and Parallelism sheets as a user sees them, for the README.

    python docs/render.py   # docs/matmul.png, parallelism.png and parallelism_sweep.png

Builds the default workbook with sheetgen, narrows the print area of the two sheets to what
a user sees on opening them (Matmul: the table beside its chart; Parallelism: the inputs,
pairing, side-by-side comparison and verdict above the batch-size sweep), prints it to PDF
with headless LibreOffice (the forced-recalculation profile of sheetgen/verify/libreoffice.py, so
the pictures show LibreOffice's own values, not the cached ones), finds each sheet's first
page by the footer the workbook prints ("Matmul 1 / 7") and rasterises it with poppler's
pdftoppm. With Pillow (installed
with matplotlib) the page is cropped to its used area and scaled to WIDTH pixels.

The third picture is a second workbook built over the host link (`link_over="host"`, PCIe),
where the batch-size sweep's TP and PP latency lines cross: its Parallelism sheet prints two
ranges, the sweep's first columns (m through the latency verdict) and the chart right of the
sweep, one page each, which are stacked (the table above its chart).
Needs LibreOffice (`soffice`) and poppler-utils (`pdftoppm`, `pdftotext`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from xlsxwriter.utility import xl_cell_to_rowcol, xl_col_to_name

DOCS = Path(__file__).resolve().parent
#: sheet name -> picture written beside this script
PICTURES = {"Matmul": DOCS / "matmul.png", "Parallelism": DOCS / "parallelism.png"}
SWEEP_PICTURE = DOCS / "parallelism_sweep.png"
#: the sweep's columns pictured: #, m, × input m, row, m (rows), best M, one GPU, PP, its cut,
#: TP, better
SWEEP_COLUMNS = "K"
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


def printed_columns(workbook: Path, sheet: str) -> int:
    """The last column (1-based) of the print area the workbook gives `sheet`: the hidden
    helper tables right of it (Parallelism's best-M table) never print."""
    with zipfile.ZipFile(workbook) as z:
        xml = z.read("xl/workbook.xml").decode()
    ref = re.escape(f"'{sheet}'" if " " in sheet else sheet)
    area = re.search(rf'<definedName name="_xlnm.Print_Area"[^>]*>{ref}!\$A\$1:\$([A-Z]+)\$',
                     xml)
    if area is None:
        fail(f"no print area for sheet {sheet!r}")
    return xl_cell_to_rowcol(f"{area.group(1)}1")[1] + 1


def parallelism_area(workbook: Path) -> str:
    """Everything above the batch-size sweep, which (with the per-layer table) runs wide,
    within the sheet's own printed columns (the hidden best-M table starts right of them)."""
    import openpyxl

    ws = openpyxl.load_workbook(workbook, read_only=True)["Parallelism"]
    width = printed_columns(workbook, "Parallelism")
    last_row, last_col = 0, 1
    for r, row in enumerate(ws.iter_rows(max_col=width), start=1):  # may open EmptyCell
        if str(row[0].value or "").startswith("Batch-size sweep"):
            break
        filled = [cell.column for cell in row if cell.value not in (None, "")]
        if filled:
            last_row, last_col = r, max(last_col, *filled)
    return f"$A$1:${xl_col_to_name(last_col - 1)}${last_row}"


def sweep_areas(workbook: Path) -> str:
    """Two print ranges: the sweep's first columns (its title row to its last row) and the
    sweep chart (its drawing anchor), printed on a page each."""
    import openpyxl

    ws = openpyxl.load_workbook(workbook, read_only=True)["Parallelism"]
    top = last = None
    for r, row in enumerate(ws.iter_rows(max_col=9), start=1):
        text = str(row[0].value or "")
        if text.startswith("Batch-size sweep"):
            top = r
        elif top and text.startswith("Per layer"):
            break
        elif top and any(cell.value not in (None, "") for cell in row):
            last = r
    with zipfile.ZipFile(workbook) as z:
        parts = {name: z.read(name) for name in z.namelist()}
    sheet = sheet_part(parts, "Parallelism")
    rels = parts[sheet.replace("worksheets/", "worksheets/_rels/") + ".rels"].decode()
    drawing = re.search(r'Target="\.\./drawings/(drawing\d+\.xml)"', rels)
    anchor = drawing and re.search(
        r"<xdr:from><xdr:col>(\d+)</xdr:col>.*?<xdr:row>(\d+)</xdr:row>.*?<xdr:to>"
        r"<xdr:col>(\d+)</xdr:col><xdr:colOff>(\d+)</xdr:colOff><xdr:row>(\d+)</xdr:row>",
        parts["xl/drawings/" + drawing.group(1)].decode())
    if top is None or anchor is None:
        fail("no batch-size sweep or sweep chart in the Parallelism sheet")
    c0, r0, c1, c1_off, r1 = (int(g) for g in anchor.groups())
    c1 -= c1_off == 0  # a chart ending at a column's left edge does not reach into it
    return (f"$A${top}:${SWEEP_COLUMNS}${last}," f"${xl_col_to_name(c0)}${r0 + 1}:"
            f"${xl_col_to_name(c1)}${r1 + 1}")


def sheet_part(parts: dict[str, bytes], sheet: str) -> str:
    """The zip member holding `sheet`'s worksheet XML, through the workbook's relationships."""
    rid = re.search(rf'<sheet name="{re.escape(sheet)}"[^>]*r:id="(\w+)"',
                    parts["xl/workbook.xml"].decode())
    rels = parts["xl/_rels/workbook.xml.rels"].decode()
    target = rid and re.search(rf'Id="{rid.group(1)}"[^>]*Target="([^"]+)"', rels)
    if not target:
        fail(f"no worksheet part for sheet {sheet!r}")
    return "xl/" + target.group(1).removeprefix("/xl/")


def fit_to_pages(page: str, tall: bool) -> str:
    """A worksheet's XML printed fit to one page wide (and one tall when `tall`), portrait
    when tall, without its manual page breaks: the workbook itself prints wide sheets
    unshrunk, split at column breaks, which a picture of one page must not be."""
    page = re.sub(r"<(rowBreaks|colBreaks)\b.*?</\1>", "", page, flags=re.S)
    if "<pageSetUpPr" in page:
        page = re.sub(r"<pageSetUpPr\b[^>]*/>", '<pageSetUpPr fitToPage="1"/>', page)
    elif re.search(r"<sheetPr\b[^>]*/>", page):
        page = re.sub(r"<sheetPr\b([^>]*)/>",
                      r'<sheetPr\1><pageSetUpPr fitToPage="1"/></sheetPr>', page, count=1)
    elif "<sheetPr" in page:
        page = page.replace("</sheetPr>", '<pageSetUpPr fitToPage="1"/></sheetPr>', 1)
    else:
        page = re.sub(r"(<worksheet\b[^>]*>)", r'\1<sheetPr><pageSetUpPr fitToPage="1"/>'
                      "</sheetPr>", page, count=1)

    def setup(m: re.Match[str]) -> str:
        attrs = re.sub(r'\s(scale|fitToWidth|fitToHeight|orientation)="[^"]*"', "", m.group(1))
        return (f'<pageSetup{attrs} fitToWidth="1" fitToHeight="{1 if tall else 0}" '
                f'orientation="{"portrait" if tall else "landscape"}"/>')

    return re.sub(r"<pageSetup\b([^>]*?)\s*/>", setup, page)


def narrow_print_areas(workbook: Path, areas: dict[str, str], one_page: set[str]) -> None:
    """Rewrite the print area (and drop the repeated rows) of each sheet in `areas`, printed
    one page wide; the sheets in `one_page` print portrait on a single page."""
    with zipfile.ZipFile(workbook) as z:
        parts = {name: z.read(name) for name in z.namelist()}
    xml = parts["xl/workbook.xml"].decode()
    for sheet, area in areas.items():
        ref = re.escape(f"'{sheet}'" if " " in sheet else sheet)
        xml = re.sub(rf'(<definedName name="_xlnm.Print_Area"[^>]*>){ref}![^<]*<',
                     lambda m, s=sheet, a=area: m.group(1)
                     + ",".join(f"{s}!{piece}" for piece in a.split(",")) + "<", xml)
        xml = re.sub(rf'<definedName name="_xlnm.Print_Titles"[^>]*>{ref}![^<]*'
                     r"</definedName>", "", xml)
    parts["xl/workbook.xml"] = xml.encode()
    for sheet in areas:
        name = sheet_part(parts, sheet)
        parts[name] = fit_to_pages(parts[name].decode(), sheet in one_page).encode()
    with zipfile.ZipFile(workbook, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)


def sheet_pages(pdf: Path) -> dict[str, int]:
    """Index of the first page of each sheet, read from the footer every page carries
    (poppler's `pdftotext -raw`: each page's text as drawn, the footer first; pages end at
    form feeds)."""
    text = subprocess.run(["pdftotext", "-raw", "-enc", "UTF-8", str(pdf), "-"], check=True,
                          capture_output=True, text=True, timeout=120).stdout
    first: dict[str, int] = {}
    for index, page in enumerate(text.split("\f")):
        footer = re.search(r"^(.+?) (\d+) / \d+", page, re.M)
        if footer:
            first.setdefault(footer.group(1).strip(), index)
    return first


def page_png(pdf: Path, index: int, tmp: Path) -> Path:
    """Page `index` (0-based) of `pdf` rasterised at DPI."""
    stem = tmp / f"{pdf.stem}-page{index}"
    subprocess.run(["pdftoppm", "-png", "-singlefile", "-r", str(DPI), "-f", str(index + 1),
                    "-l", str(index + 1), str(pdf), str(stem)], check=True)
    return stem.with_suffix(".png")


def cropped(png: Path):
    """The page's used area with a MARGIN of white (a Pillow image)."""
    from PIL import Image

    with Image.open(png) as page:
        page = page.convert("RGB")
    box = body_box(page)
    if box:
        left, top, right, bottom = box
        page = page.crop((max(left - MARGIN, 0), max(top - MARGIN, 0),
                          min(right + MARGIN, page.width), min(bottom + MARGIN, page.height)))
    return page


def save(page, out: Path) -> None:
    """Scale to WIDTH at most and save with a 256-colour palette (a sheet has few colours:
    the PNG stays small and looks the same)."""
    from PIL import Image

    if page.width > WIDTH:
        page = page.resize((WIDTH, round(page.height * WIDTH / page.width)),
                           Image.Resampling.LANCZOS)
    page.quantize(256, dither=Image.Dither.NONE).save(out, optimize=True)


def rasterise(pdf: Path, indices: list[int], out: Path, tmp: Path) -> None:
    """Pages `indices` (0-based) of `pdf`, cropped and stacked top to bottom, as a PNG at
    `out` (without Pillow: the last page, whole, as rendered)."""
    pngs = [page_png(pdf, index, tmp) for index in indices]
    try:
        from PIL import Image
    except ImportError:
        shutil.copyfile(pngs[-1], out)
        return
    pages = [cropped(png) for png in pngs]
    sheet = Image.new("RGB", (max(p.width for p in pages), sum(p.height for p in pages)),
                      "white")
    top = 0
    for page in pages:
        sheet.paste(page, (0, top))
        top += page.height
    save(sheet, out)


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
    for tool in ("pdftoppm", "pdftotext"):
        if shutil.which(tool) is None:
            fail(f"{tool} not found: install poppler-utils (apt-get install -y poppler-utils)")
    from sheetgen.api import build_workbook
    from sheetgen.errors import SheetgenError
    from sheetgen.verify.libreoffice import recalculate, soffice

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
            host, _ = build_workbook(tmp / "host_link.xlsx", link_over="host")
            narrow_print_areas(host, {"Parallelism": sweep_areas(host)}, one_page=set())
            host_pdf = recalculate(host, tmp, to="pdf", timeout=300)
        except SheetgenError as exc:
            fail(str(exc))
        pages = sheet_pages(pdf)
        for sheet, out in PICTURES.items():
            if sheet not in pages:
                fail(f"no page of sheet {sheet!r} in the PDF (found {', '.join(pages)})")
            rasterise(pdf, [pages[sheet]], out, tmp)
            print(f"{out.relative_to(DOCS.parent)}: sheet {sheet}, page {pages[sheet] + 1}")
        first = sheet_pages(host_pdf).get("Parallelism")
        if first is None:
            fail("no Parallelism page in the host-link PDF")
        rasterise(host_pdf, [first, first + 1], SWEEP_PICTURE, tmp)
        print(f"{SWEEP_PICTURE.relative_to(DOCS.parent)}: Parallelism over the host link, "
              f"pages {first + 1} and {first + 2}")

if __name__ == "__main__":
    main()
