"""One started grader for the verifier tests (starting its worker processes takes about a second)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ttscale.verifiers import Grader, GraderConfig, default_grader


@pytest.fixture(scope="session")
def grader() -> Grader:
    """The default grader behind `math_equal`, with its workers already started."""
    default = default_grader()
    default.start()
    return default


@pytest.fixture(scope="module")
def private_grader() -> Iterator[Grader]:
    """A grader of its own (no verdict cache), for tests that kill workers or count stages
    (compare counters before and after: the fixture is shared by a module's tests)."""
    with Grader(GraderConfig(workers=2, cache_size=0)) as own:
        own.start()
        yield own
