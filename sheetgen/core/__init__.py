"""Building blocks that import nothing else of sheetgen: Excel's number rules, units,
time cells, option defaults."""
