"""`python -m contextwm.cli` runs the command line, as `python -m contextwm` does."""

import sys

from contextwm.cli import main

sys.exit(main())
