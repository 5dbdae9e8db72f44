"""`python -m contextwm` runs the command-line tool."""

import sys

from contextwm.cli import main

sys.exit(main())
