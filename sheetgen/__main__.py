"""`python -m sheetgen`: the same entry as the `sheetgen` console script, Ctrl-C guard
included (sheetgen/console.py)."""

from sheetgen.console import main

if __name__ == "__main__":
    main()
