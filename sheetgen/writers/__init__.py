"""Plans to files and requests: xlsx, into an existing workbook (fill), plots, Google Sheets."""
