"""Report tests: a shared set of SYNTHETIC runs (tests/reporting/report_synthetic.py builds them)."""

from __future__ import annotations

from pathlib import Path

import pytest

#: Per-level sample accuracy that majority voting can exploit (plurality beats scattered wrong answers).
VOTABLE = (0.8, 0.5, 0.35, 0.2, 0.05)


@pytest.fixture(scope="session")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Synthetic runs: self-consistency at four token budgets, best-of-N at two of them, 20 problems each."""
    from tests.reporting.report_synthetic import make_run

    root = tmp_path_factory.mktemp("sweep")
    for budget in ("128", "256", "1k", "2k"):
        make_run(root, f"sc-{budget}", budget=budget, problems=20, skill=VOTABLE)
    for budget in ("256", "2k"):
        make_run(root, f"bon-{budget}", strategy="best_of_n", budget=budget, problems=20, skill=VOTABLE)
    return root
