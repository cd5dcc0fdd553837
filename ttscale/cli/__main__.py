"""`python -m ttscale.cli`: the same as the `ttscale` command."""

import sys

from ttscale.cli import main

sys.exit(main())
