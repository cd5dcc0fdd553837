"""`ttscale.answers.canonical` (the grader's canonical forms) under its former path, which callers still import.

This name is that module itself, not a copy (`sys.modules` holds the one module under both names), so a test that
patches an attribute here patches what every caller uses. Answer equivalence sits below the tasks, selection and
verifiers that use it (docs/architecture.md, Layers).
"""

import sys

from ttscale.answers import canonical as _module
from ttscale.answers.canonical import *  # noqa: F403 - the public names, for type checkers

sys.modules[__name__] = _module
