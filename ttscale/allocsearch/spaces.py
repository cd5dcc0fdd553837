"""The allocation spaces ttscale ships, each evaluated as the cells of one sweep.

A `Study` is a space whose every allocation is a sweep cell: one strategy with fixed parameters, the space's
dimensions as the grid's varied parameters (or as the cell's per-problem budget). `SweepEvaluator` evaluates an
allocation by finishing its cell (`sweeps.run_cell`): read from a stored pool where the sweep's replay can derive
it (GenRM's S × V from the largest S and V; sleep-time's smaller test-time budgets from the largest), run live on
the engine where it cannot (beam), and read back when it is done. So a search pays for each cell once, across
proposers, seeds and restarts, and a derivable space costs its pools and then seconds.

Spaces (per-problem costs in generated tokens, at the caps, so the total budget is checked before anything runs):
- `genrm`: S solutions × V verifications per solution; cost S·T_S + S·V·(T_V + 1) (Singhi et al., 2025);
- `sleep_time`: sleep-time tokens per context × test-time budget per query; cost b + s / q, the sleep tokens
  amortised over the q queries of a context (Lin et al., 2025);
- `beam`: N beams × T step cap; cost N·T·step_tokens;
- `grm`: best-of-N (or weighted self-consistency) with DeepSeek-GRM as its verifier: N solutions × k GRM samples
  (× k_meta voting samples with a meta RM); cost N·T_N + ⌈N/group⌉·k·(T_k + T_meta) (Liu et al., 2025).

A dimension named `PARAM.OPTION` sets an option of the verifier spec the study fixes as the strategy's parameter
PARAM (`verifier.samples`: GRM's k inside `verifier=grm:...`): each cell's spec is the fixed one with the option
set, so the sweep sees one strategy parameter whose values are whole specs. Any study with a fixed verifier spec
can vary its options so (`ttscale allocate --setting verifier.temperature=0.3,0.7`); an option the verifier does
not take is refused in one line naming those it does.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ttscale.allocsearch.space import Allocation, Dimension, Space, Value
from ttscale.allocsearch.trials import Evaluation
from ttscale.search.specs import parse_verifier_spec, render_verifier_spec


def option_of(name: str) -> tuple[str, str] | None:
    """(PARAM, OPTION) of a dimension named `PARAM.OPTION` (a verifier option), None for a plain parameter."""
    param, dot, option = name.partition(".")
    return (param, option) if dot and param and option else None


@dataclass(frozen=True, kw_only=True)
class Study:
    """A space and the sweep cells its allocations are."""

    space: Space
    strategy: str
    """The strategy every cell runs."""
    fixed: Mapping[str, Value] = field(default_factory=dict)
    """Its parameters that the search does not vary."""
    budget_dimension: str | None = None
    """The dimension that is the cell's per-problem budget; None = every cell runs at the space's total budget."""

    def __post_init__(self) -> None:
        from ttscale.verifiers.loading import build_verifier, check_verifier_spec, verifier_options

        for dim in self.space.dimensions:
            option = option_of(dim.name)
            if option is None:
                continue
            param, key = option
            spec = self.fixed.get(param)
            if not isinstance(spec, str):
                raise ValueError(f"space {self.space.name}: dimension {dim.name!r} sets an option of the verifier "
                                 f"spec {param!r}, which the space does not fix (it fixes "
                                 f"{', '.join(k for k, v in self.fixed.items() if isinstance(v, str)) or 'none'})")
            name, _ = parse_verifier_spec(spec)
            allowed = verifier_options(name)
            if allowed is not None and key not in allowed:
                raise ValueError(f"space {self.space.name}: dimension {dim.name!r}: verifier {name} has no option "
                                 f"{key!r} (its options: {', '.join(sorted(allowed))})")
        for specs in self._specs():  # every cell's spec, checked now: a bad value is refused before anything runs
            for value in specs.values():
                if any(c.isspace() or c == "|" for c in value):
                    raise ValueError(f"space {self.space.name}: the parameter value {value!r} cannot be a sweep's "
                                     "(no spaces or '|')")
            for param, value in specs.items():
                try:
                    check_verifier_spec(value)
                    if verifier_options(parse_verifier_spec(value)[0]) is not None:
                        build_verifier(value)  # its values checked too (samples=0), starting nothing
                except (ValueError, LookupError) as exc:
                    raise ValueError(f"space {self.space.name}: {param}={value}: {exc}") from None

    def entry(self) -> str:
        """The sweep's grid entry: `strategy fixed=v ... varied=v1|v2 ...`; a verifier spec whose options vary is
        one varied parameter, its values the specs the space's points use."""
        specs = self._specs()
        varied = [f"{d.name}={'|'.join(map(str, d.values))}" for d in self.space.dimensions
                  if d.name != self.budget_dimension and option_of(d.name) is None]
        varied += [f"{param}={'|'.join(dict.fromkeys(s[param] for s in specs))}" for param in self._spec_params()]
        fixed = [f"{k}={v}" for k, v in self.fixed.items() if k not in self._spec_params()]
        return " ".join([self.strategy, *fixed, *varied])

    def budgets(self) -> tuple[str, ...]:
        if self.budget_dimension is None:
            return (str(int(self.space.total_budget)),)
        dimension = next(d for d in self.space.dimensions if d.name == self.budget_dimension)
        return tuple(str(v) for v in dimension.values)

    def cell_of(self, allocation: Allocation) -> tuple[dict[str, str], str]:
        """(the cell's varied parameters as the grid writes them, its budget)."""
        a = self.space.canonical(allocation)
        params = {**{k: str(v) for k, v in self.fixed.items()},
                  **{k: str(v) for k, v in a.items() if k != self.budget_dimension and option_of(k) is None},
                  **self._spec_of(a)}
        budget = str(a[self.budget_dimension]) if self.budget_dimension else self.budgets()[0]
        return params, budget

    def _spec_params(self) -> tuple[str, ...]:
        """The fixed verifier specs some dimension sets an option of, in dimension order."""
        return tuple(dict.fromkeys(o[0] for d in self.space.dimensions if (o := option_of(d.name)) is not None))

    def _spec_of(self, allocation: Mapping[str, Value]) -> dict[str, str]:
        """Each varied spec with the allocation's options set (in place where the fixed spec names them)."""
        out: dict[str, str] = {}
        for param in self._spec_params():
            name, options = parse_verifier_spec(str(self.fixed[param]))
            for key, value in allocation.items():
                if (o := option_of(key)) is not None and o[0] == param:
                    options[o[1]] = str(value)
            out[param] = render_verifier_spec(name, options)
        return out

    def _specs(self) -> list[dict[str, str]]:
        return [self._spec_of(point) for point in self.space.points()] if self._spec_params() else []


def vary(study: Study, options: Mapping[str, tuple[Value, ...]]) -> Study:
    """`study` with each `PARAM.OPTION` of `options` a dimension of those values (replacing the study's own, kept in
    place, or added last); the study's checks refuse an option its verifier does not take."""
    import dataclasses

    dims = list(study.space.dimensions)
    for name, values in options.items():
        if option_of(name) is None:
            raise ValueError(f"{name!r} is not a verifier option (PARAM.OPTION, as verifier.samples)")
        at = next((i for i, d in enumerate(dims) if d.name == name), None)
        made = _dimension(name, tuple(values), dims[at].doc if at is not None else f"the verifier's {name}",
                          setting=name)
        if at is None:
            dims.append(made)
        else:
            dims[at] = made
    return dataclasses.replace(study, space=dataclasses.replace(study.space, dimensions=tuple(dims)))


def _dimension(name: str, values: tuple[Value, ...], doc: str, *, setting: str) -> Dimension:
    """The dimension `name` (a strategy parameter) of the values the space's `setting` keyword gave; a refusal names
    that setting, the one the user wrote (`--set solutions=1,1`), beside the dimension."""
    try:
        return Dimension(name=name, values=values, doc=doc)
    except ValueError as exc:
        if setting == name:
            raise
        said = f"dimension {name!r}"
        raise ValueError(str(exc).replace(said, f"setting {setting!r} ({said})", 1)) from None


def genrm_study(*, total_budget: float = 2048, solutions: tuple[int, ...] = (1, 2, 4, 8),
                verifications: tuple[int, ...] = (1, 2, 4), max_tokens: int = 128, verify_tokens: int = 64) -> Study:
    def cost(a: Allocation) -> float:
        s, v = int(a["n"]), int(a["verifications"])
        return s * max_tokens + s * v * (verify_tokens + 1)

    space = Space(name="genrm", total_budget=total_budget, cost=cost,
                  dimensions=(_dimension("n", solutions, "S: solutions per problem", setting="solutions"),
                              _dimension("verifications", verifications, "V: verification chains per solution",
                                         setting="verifications")),
                  doc="GenRM: solve S times, verify each solution V times, answer with the best-verified solution",
                  cost_doc=f"S·{max_tokens} + S·V·{verify_tokens + 1} generated tokens per problem")
    return Study(space=space, strategy="genrm", fixed={"max_tokens": max_tokens, "verify_tokens": verify_tokens})


def sleep_time_study(*, total_budget: float = 400, sleep: tuple[int, ...] = (0, 64, 128, 256),
                     budgets: tuple[int, ...] = (48, 96, 192, 384), queries: int = 5, max_tokens: int = 48) -> Study:
    def cost(a: Allocation) -> float:
        return int(a["budget"]) + int(a["sleep_tokens"]) / queries

    space = Space(name="sleep_time", total_budget=total_budget, cost=cost,
                  dimensions=(_dimension("sleep_tokens", sleep, "tokens the model thinks about a context before "
                                                                "its queries (0 = none)", setting="sleep"),
                              _dimension("budget", budgets, "test-time tokens per query (votes of "
                                                            f"{max_tokens} tokens each)", setting="budgets")),
                  doc=f"sleep-time compute: think about each context once, then answer its {queries} queries",
                  cost_doc=f"budget + sleep_tokens / {queries} tokens per query")
    # The test-time budget is a number of votes (`test_time=vote`): the reference's single answer has no budget axis.
    return Study(space=space, strategy="sleep_time", fixed={"max_tokens": max_tokens, "test_time": "vote"},
                 budget_dimension="budget")


def beam_study(*, total_budget: float = 2048, beams: tuple[int, ...] = (4, 8, 16), steps: tuple[int, ...] = (2, 4, 8),
               step_tokens: int = 32, width: int = 4) -> Study:
    def cost(a: Allocation) -> float:
        return int(a["n"]) * int(a["max_steps"]) * step_tokens

    space = Space(name="beam", total_budget=total_budget, cost=cost,
                  dimensions=(_dimension("n", beams, "N: beams kept per step", setting="beams"),
                              _dimension("max_steps", steps, "T: steps at most", setting="steps")),
                  doc=f"step-level beam search with the arithmetic step verifier, {width} children per beam",
                  cost_doc=f"N·T·{step_tokens} generated tokens per problem")
    return Study(space=space, strategy="beam", fixed={"width": width, "step_tokens": step_tokens,
                                                      "verifier": "arithmetic", "max_tokens": 8 * step_tokens})


def grm_study(*, total_budget: float = 2048, solutions: tuple[int, ...] = (2, 4, 8), strategy: str = "best_of_n",
              meta: str | None = None, max_tokens: int = 128, verify_tokens: int = 128, group: int = 4,
              meta_tokens: int = 0) -> Study:
    """Best-of-N (`strategy=self_consistency`: weighted self-consistency) judged by DeepSeek-GRM: N solutions, k GRM
    samples per group of `group` solutions, with `meta` (a verifier spec) only the k_meta best samples voting.
    The dimensions `verifier.samples` (k ∈ 1, 2, 4, 8) and, with `meta`, `verifier.meta_top` (k_meta ≤ k) are
    GRM's options inside the strategy's `verifier` spec; `meta_tokens`: what the meta RM generates per GRM sample
    it scores (0 for a scoring model, as a PRM), for the cost estimate only (the ledger measures it)."""
    if strategy not in ("best_of_n", "self_consistency"):
        raise ValueError(f"setting 'strategy' must be best_of_n or self_consistency, got {strategy!r}")
    for name, value in (("max_tokens", max_tokens), ("verify_tokens", verify_tokens), ("group", group)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"setting {name!r} must be a whole number ≥ 1, got {value!r}")
    if isinstance(meta_tokens, bool) or not isinstance(meta_tokens, int) or meta_tokens < 0:
        raise ValueError(f"setting 'meta_tokens' must be a whole number ≥ 0, got {meta_tokens!r}")

    def cost(a: Allocation) -> float:
        n, k = int(a["n"]), int(a["verifier.samples"])
        per_sample = int(a.get("verifier.max_tokens", verify_tokens)) + (meta_tokens if meta is not None else 0)
        return n * max_tokens + math.ceil(n / group) * k * per_sample

    def rule(a: Allocation) -> str | None:
        if "verifier.meta_top" in a and int(a["verifier.meta_top"]) > int(a["verifier.samples"]):
            return "k_meta (verifier.meta_top) must be ≤ k (verifier.samples)"
        return None

    ks = (1, 2, 4, 8)
    dims = [_dimension("n", solutions, "N: solutions per problem", setting="solutions"),
            _dimension("verifier.samples", ks, "k: GRM samples (principles, critique, scores) voting per group",
                       setting="verifier.samples")]
    if meta is not None:
        dims.append(_dimension("verifier.meta_top", ks, "k_meta: the GRM samples of the best meta-RM score that "
                                                        "vote", setting="verifier.meta_top"))
    options = {"max_tokens": str(verify_tokens), "group": str(group), **({"meta": meta} if meta is not None else {})}
    space = Space(name="grm", total_budget=total_budget, cost=cost, dimensions=tuple(dims),
                  rule=rule if meta is not None else None, rule_doc="verifier.meta_top ≤ verifier.samples",
                  doc=f"{strategy} with DeepSeek-GRM as its verifier: solve N times, judge the solutions with k GRM "
                      "samples each scoring every solution 1-10, sum the votes" + (", only the k_meta best samples "
                                                                                  "by the meta RM voting" if meta
                                                                                  else ""),
                  cost_doc=f"N·{max_tokens} + ⌈N/{group}⌉·k·{verify_tokens}"
                           + (f" + ⌈N/{group}⌉·k·{meta_tokens} (meta RM)" if meta is not None else "")
                           + " generated tokens per problem")
    return Study(space=space, strategy=strategy, fixed={"max_tokens": max_tokens,
                                                         "verifier": render_verifier_spec("grm", options)})


STUDIES: dict[str, Callable[..., Study]] = {"genrm": genrm_study, "sleep_time": sleep_time_study, "beam": beam_study,
                                            "grm": grm_study}
"""The shipped spaces by name (`ttscale allocate --space NAME`)."""


def study_sweep(study: Study, *, task: str, limit: int | None, seed: int, engine_config: Any,
                task_options: dict[str, Any] | None = None, concurrency: int = 64) -> Any:
    """The `SweepSpec` whose cells are the study's allocations."""
    from ttscale.sweeps import GridEntry, SweepSpec

    return SweepSpec(grid=(GridEntry.parse(study.entry()),), budgets=study.budgets(), seeds=(seed,), task=task,
                     task_options=dict(task_options or {}), limit=limit, engine=engine_config, concurrency=concurrency)


def check_cells(study: Study, *, root: str | Path, task: str, limit: int | None, seed: int, engine_config: Any,
                task_options: dict[str, Any] | None = None) -> None:
    """Prepare every cell of the study's sweep as its run would be (parameters, task, task options, what the
    strategy needs of the problems), creating nothing; the first cell that cannot run raises its one line."""
    from ttscale.sweeps.run import prepare_cell

    spec = study_sweep(study, task=task, limit=limit, seed=seed, engine_config=engine_config,
                       task_options=task_options)
    for cell in spec.cells():
        try:
            prepare_cell(spec, cell, root)
        except ValueError as exc:  # which point of the space, not only what the strategy refused in it
            point = " ".join([cell.strategy, *(f"{k}={v}" for k, v in sorted(cell.params.items()))])
            raise ValueError(f"space {study.space.name}: its cell `{point}` (budget {cell.budget}) cannot run: "
                             f"{exc}") from None


class SweepEvaluator:
    """Evaluates an allocation as its sweep cell (see the module docstring); the sweep lives under `root`."""

    def __init__(self, study: Study, *, root: str | Path, task: str, limit: int | None, seed: int,
                 engine_for: Callable[[], Awaitable[Any]], engine_config: Any,
                 task_options: dict[str, Any] | None = None, concurrency: int = 64) -> None:
        from ttscale.sweeps import SWEEP, create_sweep, load_spec

        self.study, self.root, self._engine_for = study, Path(root), engine_for
        spec = study_sweep(study, task=task, limit=limit, seed=seed, engine_config=engine_config,
                           task_options=task_options, concurrency=concurrency)
        if (self.root / SWEEP).is_file():
            stored = load_spec(self.root)
            if stored.cells() != spec.cells():
                raise ValueError(f"{str(self.root)!r} holds the sweep of another search (its cells differ): use "
                                 "another directory")
            spec = stored
        else:
            create_sweep(spec, self.root, command=["ttscale.allocate", study.space.name])
        self.spec = spec
        self._cells = spec.cells()

    async def __call__(self, allocation: Allocation) -> Evaluation:
        from ttscale.evals import load_task
        from ttscale.runstore.runs import read_run
        from ttscale.stats.metrics import wilson_interval
        from ttscale.sweeps import run_cell

        params, budget = self.study.cell_of(allocation)
        cell = next((c for c in self._cells if c.params == params and c.budget == budget), None)
        if cell is None:
            raise ValueError(f"no cell of the sweep is {self.study.space.render(allocation)}")
        path = await run_cell(self.spec, self.root, cell, self._cells, self._engine_for)
        records = read_run(path, finished=False, tasks=load_task).records  # as ttscale.read_records reads them
        right = sum(bool(r.get("correct")) for r in records)
        low, high = wilson_interval(right, len(records))
        spent = [float((r.get("ledger") or {}).get("generated_tokens", 0))
                 + float((r.get("ledger") or {}).get("sleep_tokens_amortised", 0)) for r in records]
        return Evaluation(accuracy=right / len(records), ci_low=min(low, right / len(records)),
                          ci_high=max(high, right / len(records)), cost=sum(spent) / len(spent), n=len(records))
