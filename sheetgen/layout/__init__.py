"""Pure planning, no I/O: sheet declarations to a WorkbookPlan; page setup, text fit, charts,
styles and colours."""
