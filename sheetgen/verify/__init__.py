"""Checking workbooks against the model: compare, check, LibreOffice recalculation, grading."""
