"""An allocation search as `ttscale allocate` and `ttscale.allocate` run it: every proposer against the grid.

The directory it writes (resumable: call again with the same `out`):
- `allocate.json`: what was searched (space and its settings, task, proposers, seeds, trials);
- `sweep/`: the sweep whose cells are the space's allocations (`SweepEvaluator`);
- `searches/`: each search's trials (`truth`, the full grid; `<proposer>-s<seed>`), one `TrialLog` each, with
  the agent's reasoning per trial;
- `table.json`: trials to the grid's optimum per proposer, and the best accuracy found after k trials.

The agent proposer asks the run's own engine (the model under study, as AgentTTS's agent is an LLM); its replies
are validated and a malformed one is counted and retried (ttscale.allocsearch.agent).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ttscale.allocsearch.agent import AgentProposer, reply_regex
from ttscale.allocsearch.bayesian import BayesianProposer
from ttscale.allocsearch.proposers import GridProposer, Proposer, RandomProposer
from ttscale.allocsearch.search import ProposerTable, compare_proposers
from ttscale.allocsearch.spaces import STUDIES, Study, SweepEvaluator, check_cells
from ttscale.runstore.names import ALLOCATION as MANIFEST
from ttscale.runstore.names import ALLOCATION_TABLE as TABLE
from ttscale.runstore.names import ENGINE_LOG, folder_entries, refuse_folder
from ttscale.runstore.runfiles import parse_json, write_atomic

PROPOSERS = ("grid", "random", "bayesian", "agent")
"""Proposers by name: grid order, uniform random, optuna's TPE, the LLM agent."""
AGENT_TOKENS = 384
"""Tokens of one agent reply at most (its reasoning and the JSON), unless `agent_tokens` says otherwise."""


@dataclass(frozen=True)
class AllocationSearch:
    """A finished (or resumed) allocation search: its directory and the proposers' table."""

    path: Path
    table: ProposerTable
    agent_tokens: int
    """Tokens the agent generated for its proposals in this call (the search's own overhead, not the task's)."""


def make_study(space: str, settings: dict[str, Any]) -> Study:
    """The named space with `settings` (its factory's keywords: total_budget, solutions, ...), or a one-line error."""
    if space not in STUDIES:
        raise ValueError(f"space must be one of {', '.join(STUDIES)}, got {space!r}")
    known = list(inspect.signature(STUDIES[space]).parameters)
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise ValueError(f"space {space} has no setting {unknown[0]!r} (it has {', '.join(known)})")
    return STUDIES[space](**settings)


def check_proposers(names: Sequence[str]) -> tuple[str, ...]:
    unknown = [n for n in names if n not in PROPOSERS]
    if unknown or not names:
        raise ValueError(f"proposers must be among {', '.join(PROPOSERS)}, got {', '.join(names) or 'none'}")
    return tuple(dict.fromkeys(names))


def _manifest(*, space: str, settings: dict[str, Any], names: Sequence[str], seeds: Sequence[int], trials: int,
              task: str, task_options: dict[str, Any] | None, limit: int | None, seed: int) -> dict[str, Any]:
    return {"space": space, "settings": settings, "proposers": list(names), "seeds": list(seeds), "trials": trials,
            "task": task, "task_options": task_options or {}, "limit": limit, "seed": seed}


def check_search(*, out: Path, manifest: dict[str, Any], study: Study, engine_config: Any) -> None:
    """Refuse, in one line and writing nothing, a search that could not run to its end: `out` holds something
    else, or a cell of the space cannot run (a setting its strategy refuses, a task it cannot take, a bad task
    option). Called before any engine starts: a refusal found by the first cell came after the engine's start
    (30 s and its chatter) and left an allocate.json that blocked the corrected command (issue 43)."""
    entries = folder_entries(out, what="an allocation search")  # a file named as --out: one line, not "File exists"
    stored = out / MANIFEST
    if MANIFEST in entries:
        try:
            before = parse_json(stored.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read {stored}: {exc}") from None
        if not isinstance(before, dict):
            raise ValueError(f"cannot read {stored}: it is not a JSON object")
        differing = sorted(k for k in manifest if k not in ("trials", "proposers", "seeds") and before.get(k) !=
                           json.loads(json.dumps(manifest[k])))
        if differing:
            raise ValueError(f"{str(out)!r} holds another allocation search (it differs in {', '.join(differing)})")
    elif entries:
        refuse_folder(out, entries, what="an allocation search")
    check_cells(study, root=out / "sweep", task=manifest["task"], limit=manifest["limit"], seed=manifest["seed"],
                engine_config=engine_config, task_options=manifest["task_options"])


def _open_search(out: Path, manifest: dict[str, Any]) -> None:
    """Make the search's folder and write what it searches (allocate.json): from then on it resumes."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())


async def run_allocation(*, space: str, settings: dict[str, Any], proposers: Sequence[str], seeds: Sequence[int],
                         trials: int, task: str, limit: int | None, out: Path, engine: Any, engine_config: Any,
                         task_options: dict[str, Any] | None = None, seed: int = 0,
                         agent_tokens: int = AGENT_TOKENS) -> AllocationSearch:
    """Compare `proposers` on the space, each for `trials` trials per search seed, against the full grid."""
    study = make_study(space, settings)
    names = check_proposers(proposers)
    manifest = _manifest(space=space, settings=settings, names=names, seeds=seeds, trials=trials, task=task,
                         task_options=task_options, limit=limit, seed=seed)
    check_search(out=out, manifest=manifest, study=study, engine_config=engine_config)
    _open_search(out, manifest)

    async def engine_for() -> Any:
        return engine

    evaluate = SweepEvaluator(study, root=out / "sweep", task=task, limit=limit, seed=seed, engine_for=engine_for,
                              engine_config=engine_config, task_options=task_options)
    spent = [0]
    shape = reply_regex(study.space)
    makers: dict[str, Callable[[int], Proposer]] = {
        "grid": lambda s: GridProposer(),
        "random": lambda s: RandomProposer(seed=s),
        "bayesian": lambda s: BayesianProposer(seed=s),
        "agent": lambda s: AgentProposer(generate=_agent(engine, spent, agent_tokens, shape), seed=s),
    }
    table = await compare_proposers(space=study.space, evaluate=evaluate, seeds=seeds, trials=trials,
                                    proposers={n: makers[n] for n in names}, log_dir=out / "searches")
    write_atomic(out / TABLE, (json.dumps(table.to_dict(), indent=2, default=str) + "\n").encode())
    return AllocationSearch(path=out, table=table, agent_tokens=spent[0])


def allocate(
    *,
    space: str = "genrm",
    proposers: Sequence[str] = PROPOSERS,
    seeds: Sequence[int] = (0, 1, 2),
    trials: int = 6,
    task: str = "arithmetic",
    limit: int | None = None,
    total_budget: float | None = None,
    settings: dict[str, Any] | None = None,
    out: str | Path | None = None,
    engine: Any = None,
    model: str | None = None,
    task_options: dict[str, Any] | None = None,
    seed: int = 0,
    agent_tokens: int = AGENT_TOKENS,
    verbose: bool = False,
) -> AllocationSearch:
    """Search `space` (genrm, sleep_time, beam: see ttscale.allocsearch.spaces) with each of `proposers` for
    `trials` trials per search seed, against the full grid's optimum, on `task`'s first `limit` problems.

    `total_budget` (tokens per problem, or per query for sleep_time) bounds every allocation; `settings` are the
    space's other values (solutions=(1, 2, 4), ...). `engine`: a started `ttscale.Engine` to share, an engine
    object (a simulator in tests), or None to start one of `model`. Calling again with the same `out` resumes:
    cells and trials already done are read back. Works inside a running event loop too. `agent_tokens`: tokens
    of one agent reply at most. An engine the call starts writes its output to `out`'s engine.log (`verbose=True`:
    to this terminal).
    """
    from ttscale.engine.spawn import refuse_in_spawned_bootstrap
    from ttscale.session import call_config, drive, stamp

    refuse_in_spawned_bootstrap("ttscale.allocate")
    given = {**(settings or {}), **({"total_budget": total_budget} if total_budget is not None else {})}
    study = make_study(space, given)  # everything refused in one line before any engine starts
    names = check_proposers(proposers)
    config = call_config(engine, model=model, engine_args=None, config=None)
    root = Path(out) if out is not None else Path("allocations") / f"{space}-{stamp()}"
    manifest = _manifest(space=space, settings=given, names=names, seeds=seeds, trials=trials, task=task,
                         task_options=task_options, limit=limit, seed=seed)
    check_search(out=root, manifest=manifest, study=study, engine_config=config)

    async def work(started: Any) -> AllocationSearch:
        if started is None:
            from ttscale.launch import start_logged

            # The search's folder first, for the engine's log: a start that fails leaves a search that resumes.
            _open_search(root, manifest)
            own = await start_logged(config, log=None if verbose else root / ENGINE_LOG)
            try:
                return await work(own)
            finally:
                from ttscale.logs import capture_output

                with capture_output(None if verbose else root / ENGINE_LOG):  # vLLM logs its shutdown too
                    await own.close()
        return await run_allocation(space=space, settings=given, proposers=proposers, seeds=seeds, trials=trials,
                                    task=task, limit=limit, out=root, engine=started, engine_config=config,
                                    task_options=task_options, seed=seed, agent_tokens=agent_tokens)

    return drive(engine, work)


def _agent(engine: Any, spent: list[int], max_tokens: int, shape: str) -> Callable[[str], Any]:
    """The agent's `generate`: one chat turn on `engine`, seeded by the prompt (the same history, the same reply),
    constrained to the reply's JSON shape (`reply_regex`: an allowed value per dimension; budget and repeats are
    still checked when the reply is read)."""
    from ttscale.schema import SamplingParams

    async def generate(prompt: str) -> str:
        ids = engine.chat_prompt([{"role": "user", "content": prompt}])
        seed = int.from_bytes(hashlib.blake2b(prompt.encode(), digest_size=4).digest(), "big") % 2**31
        asked = SamplingParams(n=1, temperature=0.7, max_tokens=max_tokens, regex=shape)
        generation = await engine.generate(ids, asked, seed=seed)
        spent[0] += sum(c.num_tokens for c in generation.completions)
        return generation.completions[0].text if generation.completions else ""

    return generate
