"""ttscale: test-time compute scaling for LLMs, budget-matched by construction.

`import ttscale` is light on purpose: no vllm, torch or ray is imported until an engine
or a model is actually needed.
"""

import importlib
from typing import TYPE_CHECKING, Any

from ttscale.budget import Budget, Ledger
from ttscale.registry import Registry
from ttscale.schema import Answer, Completion, Generation, Problem, RunRecord, Sample, SamplingParams
from ttscale.version import __version__

_API = ("run", "sweep", "fit", "report", "Engine", "Run", "Sweep", "read_records")
_REGISTRIES = {"STRATEGIES": "ttscale.strategies", "TASKS": "ttscale.evals", "VERIFIERS": "ttscale.verifiers"}


if TYPE_CHECKING:  # for type checkers and IDEs; at run time `__getattr__` imports it on first use
    from ttscale.allocsearch.run import AllocationSearch, allocate
    from ttscale.api import Engine, Run, Sweep, fit, read_records, report, run, sweep
    from ttscale.comparison import compare
    from ttscale.evals import TASKS
    from ttscale.planning import plan
    from ttscale.reporting.frames import load_runs
    from ttscale.strategies import STRATEGIES
    from ttscale.verifiers import VERIFIERS


def __getattr__(name: str) -> Any:
    # The registries live with what they register (ttscale.strategies, .evals, .verifiers); their packages
    # import only the registry and, for verifiers, the grader's front end.
    if name in _REGISTRIES:
        return getattr(importlib.import_module(_REGISTRIES[name]), name)
    # `load_runs` needs pandas: import it on first use so that `import ttscale` stays light.
    if name == "load_runs":
        from ttscale.reporting.frames import load_runs

        return load_runs
    if name in _API:  # the one-call API (ttscale.api): engines start only when used
        from ttscale import api

        return getattr(api, name)
    if name in ("allocate", "AllocationSearch"):  # allocation search (ttscale.allocsearch): optuna on first use
        from ttscale.allocsearch import run as allocation

        return getattr(allocation, name)
    if name == "plan":  # sizes for a claim's power (ttscale.planning): statsmodels on first use
        from ttscale.planning import plan

        return plan
    if name == "compare":  # paired comparisons (ttscale.comparison) run sweeps: imported on first use
        from ttscale.comparison import compare

        return compare
    raise AttributeError(f"module 'ttscale' has no attribute {name!r}")


__all__ = [
    "STRATEGIES",
    "TASKS",
    "VERIFIERS",
    "AllocationSearch",
    "Answer",
    "Budget",
    "Completion",
    "Engine",
    "Generation",
    "Ledger",
    "Problem",
    "Registry",
    "Run",
    "RunRecord",
    "Sample",
    "SamplingParams",
    "Sweep",
    "__version__",
    "allocate",
    "compare",
    "fit",
    "load_runs",
    "plan",
    "read_records",
    "report",
    "run",
    "sweep",
]
