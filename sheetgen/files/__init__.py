"""Safe file handling: atomic writes, untrusted-workbook guard."""
