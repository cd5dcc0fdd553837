"""`ttscale compare`: paired multi-seed comparisons of strategies (`ttscale.compare`): accuracy differences with
Tango's score interval for paired proportions, cost ratios with a cluster bootstrap over problems.

Run mode: strategies A, B, ... on the same problems with the same seeds, R repeats. It is a sweep
(ttscale.sweeps) whose grid entries are the strategies, with one budget and seeds 0..R−1: repeat r is
run seed r for every strategy (the seed every per-request seed is derived from, with the problem and the
request: ttscale.running.problem_engine), so each (problem, repeat) is a pair that saw the same problem under the
same seed, and the repeats of a strategy draw different samples. The directory is a sweep directory
(sweep.json, cells/), so it resumes like one (`--resume DIR`) and every cell reads like a run; the
analysis is written next to it as compare.json.

Read mode: run, sweep or compare directories; runs are grouped into arms (by default runs that differ
only in their seed are repeats of one arm), paired by problem and run seed, and compared pair by pair
(ttscale.stats.paired: the statistics and the verdict wording). Runs of one configuration on engines known to
differ are arms of their own, and their pair says so instead of reading as a strategy's
(ttscale.comparisons.environments).

compare.json describes itself (format, method, each metric's source and kind, arms, pairs, verdicts) so
that a report can render it without this module; `markdown(data)` is the rendering the CLI prints.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ttscale.comparisons import environments
from ttscale.comparisons.environments import EnvironmentNote
from ttscale.comparisons.markdown import markdown
from ttscale.comparisons.spec import compare_spec
from ttscale.evals import load_task
from ttscale.routing.policy import candidate_key
from ttscale.runstore import runs
from ttscale.runstore.names import COMPARE, UNTIL_DECIDED, check_out_folder
from ttscale.runstore.storage import CONFIG, RunDir
from ttscale.stats.paired import METRICS, PairResult, compare_pair
from ttscale.sweeps import SWEEP, cell_dir, create_sweep, load_spec, run_sweep

if TYPE_CHECKING:
    from ttscale.engine.base import AsyncEngine, EngineConfig
    from ttscale.running.session import SharedEngine

FORMAT = "ttscale.compare"
VERSION = 1
Group = Literal["config", "strategy", "run"]
GROUPS: tuple[str, ...] = ("config", "strategy", "run")
#: The intervals a comparison reports, in the words of `ttscale --help`, `compare --help` and the docs (one source:
#: tests/test_readme.py holds the docs to them). Accuracy differences are binary: Tango's interval; costs: bootstrap.
ACCURACY_INTERVAL = "Tango's score interval for paired proportions"
COST_INTERVAL = "a cluster bootstrap over problems"
INTERVALS = f"accuracy differences with {ACCURACY_INTERVAL}, cost ratios with {COST_INTERVAL}"


@dataclass(frozen=True, kw_only=True)
class CompareOptions:
    """How arms are formed and how the intervals are computed."""

    confidence: float = 0.95
    """Confidence level of the percentile intervals."""
    resamples: int = 2000
    """Bootstrap resamples (B)."""
    seed: int = 0
    """Seed of the bootstrap draws (the same for every pair)."""
    group: Group = "config"
    """config: runs that differ only in their seed are repeats of one arm; strategy: runs with the same strategy
    and parameters are one arm; run: every run directory is an arm of its own."""

    def __post_init__(self) -> None:
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        if isinstance(self.resamples, bool) or not isinstance(self.resamples, int) or self.resamples < 100:
            raise ValueError(f"resamples must be a whole number ≥ 100, got {self.resamples}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a whole number ≥ 0, got {self.seed!r}")  # numpy's own says no name
        if self.group not in GROUPS:
            raise ValueError(f"group must be one of {', '.join(GROUPS)}, got {self.group!r}")


@dataclass(frozen=True, kw_only=True)
class Arm:
    """One side of a comparison: records keyed by (problem id, run seed), and what produced them."""

    label: str
    records: dict[tuple[str, int], dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)
    """strategy, params, budget, task, model, run seeds, source directories, engine environment (compare.json)."""
    key: str | None = None
    """Its configuration: arms with one key differ only in their engine environment (`environments`)."""

    def summary(self) -> dict[str, Any]:
        errored = [key for key, r in self.records.items() if r.get("error")]
        return {"label": self.label, **self.info, "records": len(self.records),
                "problems": len({p for p, _ in self.records}), "errored": len(errored),
                "errored_problems": len({p for p, _ in errored})}


@dataclass(frozen=True)
class Comparison:
    """Every pair of arms compared; `verdicts` has one line per pair."""

    arms: tuple[Arm, ...]
    pairs: tuple[PairResult, ...]
    options: CompareOptions
    directory: Path | None = None
    """Where compare.json was written (None: not written)."""
    environment_notes: tuple[EnvironmentNote | None, ...] = ()
    """Per pair, what the arms' engine environments say (None: they agree, or either is unknown)."""
    until_decided: Mapping[str, Any] | None = None
    """A comparison that stopped when decided: its claim, looks and stop (`until_decided`); None: fixed size."""
    created: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    """When it was computed: compare.json and to_dict() say the same, however late either is asked."""

    @property
    def verdicts(self) -> list[str]:
        return [environments.verdict(p, n) for p, n in itertools.zip_longest(self.pairs, self.environment_notes)]

    def to_dict(self) -> dict[str, Any]:
        from ttscale.version import __version__

        o = self.options
        return {
            "format": FORMAT,
            "version": VERSION,
            "ttscale_version": __version__,
            "created": self.created,
            "directory": None if self.directory is None else str(self.directory),
            "method": {
                "pairing": "records are paired by problem id and run seed (by repeat order when the arms' seeds "
                           "differ); a pair where either side errored is left out and counted",
                "difference": "accuracy: mean over pairs of A minus B, in points",
                "ratio": "costs: ratio of means, mean A / mean B (below 1: A spends less)",
                "bootstrap": "cluster bootstrap over problems: problems drawn with replacement, each with all "
                             "its pairs; percentile interval (costs, and differences that are not binary)",
                "binary_difference": "accuracy (right/wrong on each side of a pair): Tango's score interval for "
                                     "the difference of paired proportions (Tango 1998), the discordant and total "
                                     "pair counts divided by the design effect of the repeats (Rao-Scott: 1 with "
                                     "one pair per problem, its maximum when no pair is discordant)",
                "confidence": o.confidence, "resamples": o.resamples, "seed": o.seed, "group": o.group,
                "detectable": "the interval excludes 0 (difference) or 1 (ratio); an interval that covers it is no "
                              "evidence of equality",
                "ci_none": "a None interval end is unbounded (a resample's denominator was 0)",
            },
            "metrics": {m.name: {"label": m.label, "kind": m.kind, "source": m.source} for m in METRICS},
            "arms": [a.summary() for a in self.arms],
            "pairs": [environments.pair_dict(*pn) for pn in itertools.zip_longest(self.pairs, self.environment_notes)],
            "verdicts": self.verdicts,
            **({"until_decided": dict(self.until_decided)} if self.until_decided is not None else {}),
        }

    def to_markdown(self) -> str:
        return markdown(self.to_dict())


# -- the library call ------------------------------------------------------------------------------

def compare(
    *,
    runs: Sequence[str | Path] = (),
    strategies: Sequence[str] = (),
    resume: str | Path | None = None,
    repeats: int = 3,
    budget: str = "8k",
    task: str = "arithmetic",
    task_options: Mapping[str, Any] | None = None,
    limit: int | None = None,
    model: str | None = None,
    engine_args: Mapping[str, Any] | None = None,
    engine_config: EngineConfig | None = None,
    concurrency: int = 64,
    out: str | Path | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    group: Group = "config",
    engine: SharedEngine | AsyncEngine | None = None,
    progress: bool = True,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    command: list[str] | None = None,
    deterministic: bool | None = None,
    until_decided: str | None = None,
    max_problems: int | None = None,
    batch: int | None = None,
    design: str | None = None,
    verbose: bool = False,
) -> Comparison:
    """Compare run directories (`runs`), or run `strategies` R = `repeats` times and compare them, or finish
    the run of a compare directory (`resume`). Exactly one of the three. Run mode writes `out` (default
    compares/<task>-<time>); read mode writes compare.json only when `out` is given.

    The engine, as for `ttscale.run` and `ttscale.sweep`: `engine` a started `ttscale.Engine` shared by every
    repeat (its settings are the comparison's), or an engine object used as it is (a simulator in tests);
    None = each repeat starts its own, as a sweep does, of `model` (None: `embedded`) with `engine_args` (vLLM
    engine arguments by name), or as `engine_config` (a whole EngineConfig) says. Works inside a running event
    loop (a notebook) too. `deterministic`: as for `ttscale.run`. An engine a repeat starts writes its output to
    the comparison directory's engine.log (`verbose=True`: to this terminal). Bad input raises ValueError (or a
    subclass) with a one-line message.

    `until_decided`, `max_problems`, `batch`, `design`: a comparison of two strategies that stops when decided
    (ttscale.comparisons.until_decided; `design` as ttscale.stats.designs.parse_design reads it, default the
    recommended one; `batch`: a look every B problems instead of the design's looks).
    """
    from ttscale.engine.spawn import refuse_in_spawned_bootstrap
    from ttscale.running.session import call_config, drive

    options = CompareOptions(confidence=confidence, resamples=resamples, seed=seed, group=group)
    runs = [runs] if isinstance(runs, str | Path) else runs  # one directory given as such, not its characters
    strategies = [strategies] if isinstance(strategies, str) else strategies
    if sum(map(bool, (runs, strategies, resume))) != 1:
        raise ValueError("give run directories to compare, strategies to run (at least two), or a compare "
                         "directory to resume: exactly one of the three")
    if runs:
        if out:
            # Before anything is read: a user's compare.json, a run or other files are never written over.
            check_out_folder(out, what="a ttscale comparison", own=COMPARE, own_format=FORMAT)
            # Nor a comparison that ran its own strategies (a sequential one too): its compare.json describes the
            # runs in its folder, which report, plan and --resume read beside it.
            ran = [name for name in (SWEEP, UNTIL_DECIDED) if (Path(out) / name).exists()]
            if ran:
                raise ValueError(f"--out {str(out)!r} is a comparison that ran its strategies ({', '.join(ran)}): "
                                 "its compare.json describes the runs in it, never replaced; write elsewhere")
        result = analyse(runs, options=options)
        return write(result, out) if out else result
    refuse_in_spawned_bootstrap("ttscale.compare")  # runs strategies: before its folder is read or made
    from ttscale.comparisons import until_decided as sequential

    state = sequential.arguments(runs=runs, resume=resume, limit=limit, strategies=strategies,
                                 claim=until_decided, max_problems=max_problems, batch=batch, design=design)
    config = call_config(engine, model=model, engine_args=engine_args, config=engine_config,
                         deterministic=deterministic)
    if resume:
        root = Path(resume)
        spec = load_spec(root)
        state = sequential.load(root)
    else:
        spec = compare_spec(strategies=strategies, repeats=repeats, budget=budget, task=task,
                            task_options=task_options, limit=state["max_problems"] if state else limit,
                            engine_config=config, concurrency=concurrency)
        root = Path(out) if out else Path("compares") / f"{task.replace(':', '-')}-{time.strftime('%Y%m%d-%H%M%S')}"
        create_sweep(spec, root, command=command, what="a ttscale comparison")
        if state:
            sequential.save(root, state)  # before any look: a resume must know it is sequential
    if state:
        done = drive(engine, lambda started: sequential.run(spec, root, state, engine=started, progress=progress,
                                                            log=log, verbose=verbose))
        return write(replace(analyse([root], options=options), until_decided=done), root)
    drive(engine, lambda started: run_sweep(spec, root, engine=started, progress=progress, log=log,
                                            verbose=verbose))
    return write(analyse([root], options=options), root)


def write(result: Comparison, directory: str | Path) -> Comparison:
    """Write compare.json into `directory` (made if missing); the result, with its directory set."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    done = replace(result, directory=path)
    RunDir(path).write_json(COMPARE, done.to_dict())
    return done


# -- reading runs into arms ------------------------------------------------------------------------

def analyse(paths: Sequence[str | Path], *, options: CompareOptions | None = None) -> Comparison:
    """Read the directories into arms and compare every pair of arms (in the order they were given)."""
    options = options or CompareOptions()
    arms = load_arms(paths, group=options.group)
    both = list(itertools.combinations(arms, 2))
    pairs = tuple(compare_pair(a.label, a.records, b.label, b.records, confidence=options.confidence,
                               resamples=options.resamples, seed=options.seed) for a, b in both)
    return Comparison(tuple(arms), pairs, options, environment_notes=tuple(environments.note(a, b) for a, b in both))


def read_config_and_records(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One run's config.json and finished records (through ttscale.runstore.runs, as fit and report read it)."""
    run = runs.read_run(path, finished=False, tasks=load_task)
    return run.config, run.records


def load_arms(paths: Sequence[str | Path], *, group: Group = "config") -> list[Arm]:
    """Arms from run, sweep and compare directories: runs grouped by `group`, repeats keyed by run seed."""
    # Each group with its configuration (Arm.key): with --group run, the configuration of the run that is the arm.
    groups: dict[tuple[str, str], list[environments.Run]] = {}
    for path in paths:
        for run_path, label in _run_dirs(Path(path)):
            config, records = read_config_and_records(run_path)
            identity = config.get("identity")
            if not isinstance(identity, dict) or "seed" not in identity:
                raise ValueError(f"{run_path / CONFIG} has no run identity (not written by `ttscale run`?)")
            key = _group_key(identity, group, run_path)
            config_key = _group_key(identity, "config", run_path) if group == "run" else key
            groups.setdefault((key, config_key), []).append((run_path, label, config, records))
    # Runs of one configuration on engines known to differ are arms of their own (ttscale.comparisons.environments).
    arms = [_arm(part, key=configuration, suffix=suffix) for (_, configuration), runs in groups.items()
            for suffix, part in environments.split(runs)]
    if len(arms) < 2:
        found = arms[0].label if arms else "none"
        raise ValueError(f"a comparison needs at least two arms, found {len(arms)} ({found}); give runs of two "
                         "strategies, or --group run to compare directories that differ only in seed")
    tasks = {json.dumps(_problems_of(a.info.get("task_identity")), sort_keys=True, default=str) for a in arms}
    if len(tasks) > 1:
        raise ValueError(f"the arms ran different tasks ({'; '.join(sorted(tasks))}); pairs need the same problems")
    return _unique_labels(arms)


def _run_dirs(path: Path) -> list[tuple[Path, str | None]]:
    """The run directories under `path`, each with its label when a sweep names it (cell candidate)."""
    if (path / SWEEP).is_file():
        spec = load_spec(path)
        cells = [(cell_dir(path, c).path, c.candidate) for c in spec.cells()]
        return [(p, label) for p, label in cells if (p / CONFIG).is_file()]
    if (path / CONFIG).is_file():
        return [(path, None)]
    raise ValueError(f"{str(path)!r} is not a ttscale run, sweep or compare directory (no {CONFIG} or {SWEEP})")


def _group_key(identity: dict[str, Any], group: Group, path: Path) -> str:
    if group == "run":
        return str(path)
    if group == "strategy":
        return json.dumps([identity.get("strategy"), identity.get("params")], sort_keys=True, default=str)
    # config: everything that determines the results except the seed (and how many problems were run)
    rest = {k: v for k, v in identity.items() if k not in ("seed", "limit")}
    if isinstance(rest.get("engine"), dict):
        rest["engine"] = {k: v for k, v in rest["engine"].items() if k != "seed"}
    rest["task"] = _problems_of(rest.get("task"))
    return json.dumps(rest, sort_keys=True, default=str)


def _arm(runs: list[environments.Run], *, key: str | None = None, suffix: str | None = None) -> Arm:
    _, label, config, _ = runs[0]
    spec = config.get("spec") or {}
    label = label or candidate_key(str(spec.get("strategy", config["identity"].get("strategy"))),
                                   spec.get("params") or {})
    label = f"{label} {suffix}" if suffix else label
    records: dict[tuple[str, int], dict[str, Any]] = {}
    where: dict[int, Path] = {}
    for run_path, _, cfg, recs in runs:
        seed = int(cfg["identity"]["seed"])
        if seed in where:
            raise ValueError(f"{label}: run seed {seed} is in two directories ({where[seed]}, {run_path}); give "
                             "each run once, or --group run to compare them as separate arms")
        where[seed] = run_path
        records.update({(str(r["id"]), seed): r for r in recs})
    info = {"strategy": spec.get("strategy"), "params": spec.get("params") or {}, "budget": spec.get("budget"),
            "task": spec.get("task"), "model": (spec.get("engine") or {}).get("model"),
            "run_seeds": sorted(where), "sources": [str(where[s]) for s in sorted(where)],
            "task_identity": config["identity"].get("task"), "environment": environments.merged(runs)}
    return Arm(label=label, records=records, info=info, key=key)


def _problems_of(task: Any) -> Any:
    """What determines a task's problems: its stored config, less how it was spelled and where its files were."""
    return {k: v for k, v in task.items() if k not in ("options", "spec")} if isinstance(task, dict) else task


def _unique_labels(arms: list[Arm]) -> list[Arm]:
    """Arms named alike (one strategy at two budgets, or --group run) get their budget, then their directory."""
    out = []
    for arm in arms:
        label = arm.label
        if sum(a.label == arm.label for a in arms) > 1:
            label = f"{arm.label} b={arm.info.get('budget')}"
            if sum(f"{a.label} b={a.info.get('budget')}" == label for a in arms) > 1:
                label = f"{label} ({Path(arm.info['sources'][0]).name})"
        out.append(replace(arm, label=label))
    return out


__all__ = ["Arm", "CompareOptions", "Comparison", "analyse", "compare", "compare_spec", "load_arms", "markdown",
           "read_config_and_records", "write"]
