"""Verifiers and graders (installed as `ttscale.verifiers`), and the verifier registry.

Built-in verifiers are registered in `VERIFIERS` by path (imported when chosen); a plugin registers a factory
with `@VERIFIERS.register("name")` or under the `ttscale.verifiers` entry-point group.

`math_equal` is the answer grader every math task uses; `safe_eval` / `check_step` are the
arithmetic step checker's safe evaluator. Importing this package stays light: sympy and
math-verify are only imported inside the grader's worker processes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ttscale.registry import Registry

if TYPE_CHECKING:
    from ttscale.verifiers.base import Verifier

VERIFIERS: Registry[Callable[..., Verifier]] = Registry("verifier", entry_point_group="ttscale.verifiers")
"""Verifiers: factories `(**options) -> Verifier` (see ttscale.verifiers.base)."""
VERIFIERS.register("arithmetic", "ttscale.verifiers.arithmetic:ArithmeticVerifier", aliases=("arith",))
VERIFIERS.register("noisy_oracle", "ttscale.verifiers.noisy_oracle:NoisyOracle", aliases=("oracle",))
VERIFIERS.register("llm_judge", "ttscale.verifiers.llm_judge:LLMJudge", aliases=("judge",))
VERIFIERS.register("genrm", "ttscale.verifiers.genrm:GenRM")
VERIFIERS.register("grm", "ttscale.verifiers.grm:GRM", aliases=("deepseek_grm",))
VERIFIERS.register("prm", "ttscale.verifiers.prm:PRM", aliases=("process_reward_model",))
VERIFIERS.register("visible_tests", "ttscale.verifiers.visible_tests:VisibleTests", aliases=("doctests",))

from ttscale.answers.grading import (  # noqa: E402 - after the registry, which the verifiers' modules import
    CrossCheckReport,
    Grader,
    GraderConfig,
    GraderUnavailableError,
    GradingStats,
    configure_grader,
    cross_check,
    default_grader,
    math_equal,
    math_equal_async,
    math_equal_many,
)
from ttscale.answers.normalize import normalize, normalized_equal  # noqa: E402

__all__ = [
    "VERIFIERS",
    "CrossCheckReport",
    "Grader",
    "GraderConfig",
    "GraderUnavailableError",
    "GradingStats",
    "configure_grader",
    "cross_check",
    "default_grader",
    "math_equal",
    "math_equal_async",
    "math_equal_many",
    "normalize",
    "normalized_equal",
]
