"""One entry point over the laws: `fit_law(law, data, ...)`, what `ttscale.fit` and `ttscale fit` call.

`data` holds the law's variables as arrays keyed by their canonical names (`ttscale.scaling.inputs` reads them
from a CSV of points or from run directories).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ttscale.scaling._resample import FitInputError
from ttscale.scaling.coverage import fit_coverage, fit_coverage_from_samples
from ttscale.scaling.genrm import fit_genrm
from ttscale.scaling.kinetics import fit_kinetics
from ttscale.scaling.result import Fit
from ttscale.scaling.saturation import fit_saturation

LAWS = ("coverage", "saturation", "kinetics", "genrm")


def fit_law(
    law: str,
    data: Mapping[str, Any],
    *,
    form: str,
    mode: str,
    epsilon: float,
    lam: float | None,
    scope: str | None,
    n_boot: int,
    level: float,
    seed: int,
) -> Fit:
    """Fit `law` to `data`; `form`, `mode` and `epsilon` are the saturation law's, `scope` the kinetics
    frontier's, `lam` (verification tokens per solution token) the GenRM law's. Every option is given: their
    defaults are `ttscale.fit`'s, stated once there (reading them from here would import the fitters, numpy and
    scipy with `ttscale.api`)."""
    common: dict[str, Any] = {"n_boot": n_boot, "level": level, "seed": seed}
    if law == "coverage":
        if "n" in data:
            return fit_coverage_from_samples(n=data["n"], correct=data["correct"], **common)
        return fit_coverage(k=data["k"], coverage=data["coverage"], problem=data.get("problem"), **common)
    if law == "saturation":
        return fit_saturation(form=form, budget=data["budget"], accuracy=data["accuracy"],  # type: ignore[arg-type]
                              problem=data.get("problem"), mode=mode, epsilon=epsilon, **common)
    if law == "kinetics":
        return fit_kinetics(model=data["model"], cost=data["cost"], accuracy=data["accuracy"],
                            query=data.get("query"), config=data.get("config"), scope=scope, **common)  # type: ignore[arg-type]
    if law == "genrm":
        if lam is None:
            raise FitInputError("the genrm law needs lam (verification tokens per solution token, e.g. 1.0)")
        return fit_genrm(s=data["S"], v=data["V"], accuracy=data["accuracy"], lam=lam, problem=data.get("problem"),
                         **common)
    raise FitInputError(f"law must be one of {', '.join(LAWS)}, got {law!r}")
