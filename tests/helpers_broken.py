"""A strategy that always fails, for the runner's error-handling test."""

from __future__ import annotations

from typing import Any

from ttscale.blocks.sampling import PoolParams
from ttscale.kit.params import strategy


@strategy(PoolParams)
async def broken(problem: Any, ctx: Any, p: PoolParams) -> Any:
    raise RuntimeError("boom")
