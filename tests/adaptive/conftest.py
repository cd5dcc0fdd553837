"""Adaptive-routing tests: simulated engines for pure-logic tests (the real engine is the session fixture)."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for path in (str(_HERE), str(_HERE.parent / "search")):
    if path not in sys.path:
        sys.path.insert(0, path)
