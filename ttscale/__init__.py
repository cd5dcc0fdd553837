"""ttscale: test-time compute scaling for LLMs, budget-matched by construction.

`import ttscale` is light on purpose: no vllm, torch or ray is imported until an engine
or a model is actually needed.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ttscale.budget import Budget, Ledger
from ttscale.registry import Registry
from ttscale.schema import Answer, Completion, Generation, Problem, RunRecord, Sample, SamplingParams
from ttscale.version import FORMER_NAMES as FORMER_NAMES
from ttscale.version import FORMER_PATHS_REMOVED_IN as FORMER_PATHS_REMOVED_IN
from ttscale.version import __version__, moved

_API = ("run", "sweep", "fit", "report", "SharedEngine", "Run", "Sweep", "read_records")
#: Public names that were renamed, by what users write: `ttscale.Engine` is the shared engine handle
#: (`ttscale.running.session.SharedEngine`), not an engine backend (`ttscale.engine`).
_RENAMED = {"Engine": "SharedEngine"}
_REGISTRIES = {"STRATEGIES": "ttscale.strategies", "TASKS": "ttscale.evals", "VERIFIERS": "ttscale.verifiers"}

FORMER_PATHS = {
    "ttscale.context": "ttscale.kit.context",
    "ttscale.params": "ttscale.kit.params",
    "ttscale.capabilities": "ttscale.kit.capabilities",
    "ttscale.selection": "ttscale.kit.selection",
    "ttscale.stages": "ttscale.kit.stages",
    "ttscale.sampling": "ttscale.blocks.sampling",
    "ttscale.thinking": "ttscale.blocks.thinking",
    "ttscale.comparison": "ttscale.comparisons.paired",
    "ttscale.verifiers.grading": "ttscale.answers.grading",
    "ttscale.verifiers.canonical": "ttscale.answers.canonical",
    "ttscale.verifiers.pool": "ttscale.answers.pool",
    "ttscale.evals.extract": "ttscale.answers.extract",
    "ttscale.evals.metrics": "ttscale.stats.metrics",
    "ttscale.confidence": "ttscale.engine.confidence",
}
"""Modules that moved, by the path README, docs or plugins imported them at: the former path is the module itself
(`sys.modules` holds it under both names, so a patch through either reaches every caller), imported only when the
former path is, with a DeprecationWarning naming the new path and the version that removes it
(`FORMER_PATHS_REMOVED_IN`; names that moved out of a module that stayed: `FORMER_NAMES`, both in ttscale.version).
Code in this repository imports the new paths (docs/architecture.md, Layers)."""

class _FormerPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The import hook behind `FORMER_PATHS`: one entry a moved module, instead of a file at each former path."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(name, self) if name in FORMER_PATHS else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        moved(spec.name, FORMER_PATHS[spec.name])
        module = importlib.import_module(FORMER_PATHS[spec.name])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the former path's spec on the module: it keeps its own.
        module.__spec__ = module.__spec__.loader_state if module.__spec__ else None


# Once per process: a second import of the package (tools/lint_imports.py stages a copy) finds it installed.
if not any(type(finder).__qualname__ == "_FormerPaths" for finder in sys.meta_path):
    sys.meta_path.insert(0, _FormerPaths())

if TYPE_CHECKING:  # for type checkers and IDEs; at run time `__getattr__` imports it on first use
    from ttscale.allocsearch.run import AllocationSearch, allocate
    from ttscale.api import Run, SharedEngine, Sweep, fit, read_records, report, run, sweep

    Engine = SharedEngine
    from ttscale.comparisons.paired import compare
    from ttscale.comparisons.planning import plan
    from ttscale.evals import TASKS
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
    name = _RENAMED.get(name, name)
    if name in _API:  # the one-call API (ttscale.api): engines start only when used
        from ttscale import api

        return getattr(api, name)
    if name in ("allocate", "AllocationSearch"):  # allocation search (ttscale.allocsearch): optuna on first use
        from ttscale.allocsearch import run as allocation

        return getattr(allocation, name)
    if name == "plan":  # sizes for a claim's power (ttscale.comparisons.planning): statsmodels on first use
        from ttscale.comparisons.planning import plan

        return plan
    if name == "compare":  # paired comparisons (ttscale.comparisons.paired) run sweeps: imported on first use
        from ttscale.comparisons.paired import compare

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
    "SharedEngine",
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
