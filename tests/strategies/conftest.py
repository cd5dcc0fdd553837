"""Strategy tests: the simulated policy for pure-logic tests (the real engine is the session fixture)."""

from __future__ import annotations

import sys
from pathlib import Path

_SEARCH_TESTS = str(Path(__file__).resolve().parents[1] / "search")
if _SEARCH_TESTS not in sys.path:
    sys.path.insert(0, _SEARCH_TESTS)
