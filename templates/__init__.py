"""GPU presets and sample inputs, shipped as package data (sheetgen.templates)."""
