"""Verifiers and graders (installed as `ttscale.verifiers`).

`math_equal` is the answer grader every math task uses; `safe_eval` / `check_step` are the
arithmetic step checker's safe evaluator. Importing this package stays light: sympy and
math-verify are only imported inside the grader's worker processes.
"""

from ttscale.verifiers.grading import (
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
from ttscale.verifiers.normalize import normalize, normalized_equal

__all__ = [
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
