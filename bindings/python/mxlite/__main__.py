"""`python -m mxlite ...`: the same as the `mxlite` command (see mxlite.cli)."""
import sys

from .cli import main

sys.exit(main())
