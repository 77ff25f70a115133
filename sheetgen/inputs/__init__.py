"""Reading what a workbook is built from: transformer model configs."""
