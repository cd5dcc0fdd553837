"""An allocation search as `ttscale allocate` and `ttscale.allocate` run it: every proposer against the grid.

The directory it writes (resumable: call again with the same `out`):
- `allocate.json`: what was searched (space and its settings, task, proposers, seeds, trials);
- `sweep/`: the sweep whose cells are the space's allocations (`SweepEvaluator`);
- `searches/`: each search's trials (`truth`, the full grid; `<proposer>-s<seed>`), one `TrialLog` each, with
  the agent's reasoning per trial;
- `table.json`: trials to the grid's optimum per proposer, and the best accuracy found after k trials.

The agent proposers ask the run's own engine (the model under study, as AgentTTS's agent is an LLM): `agent` is
AgentTTS's loop (ttscale.allocsearch.agenttts: a rule-based start, insights, 10 candidates per iteration),
`agent_single` the one-allocation-per-call agent (ttscale.allocsearch.agent). Their replies are validated and a
malformed one is counted and retried; every call is metered, against `agent_budget` tokens per search when given.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ttscale.allocsearch.agent import AgentProposer, reply_regex
from ttscale.allocsearch.agenttts import CANDIDATES, SYSTEM, AgentBudgetSpent, AgentTTSProposer, candidates_regex
from ttscale.allocsearch.bayesian import BayesianProposer
from ttscale.allocsearch.proposers import GridProposer, Proposer, RandomProposer
from ttscale.allocsearch.search import ProposerTable, compare_proposers
from ttscale.allocsearch.spaces import STUDIES, Study, SweepEvaluator, check_cells, option_of, vary
from ttscale.runstore.names import ALLOCATION as MANIFEST
from ttscale.runstore.names import ALLOCATION_TABLE as TABLE
from ttscale.runstore.names import ENGINE_LOG, folder_entries, refuse_folder
from ttscale.runstore.runfiles import parse_json, write_atomic

PROPOSERS = ("grid", "random", "bayesian", "agent", "agent_single")
"""Proposers by name: grid order, uniform random, optuna's TPE, AgentTTS's agent loop, the one-at-a-time agent."""
DEFAULT_PROPOSERS = ("grid", "random", "bayesian", "agent")
"""What a search compares unless told: the baselines and AgentTTS's agent."""
AGENT_TOKENS = 384
"""Tokens of one agent reply at most (its reasoning and the JSON), unless `agent_tokens` says otherwise."""


@dataclass(frozen=True)
class AllocationSearch:
    """A finished (or resumed) allocation search: its directory and the proposers' table."""

    path: Path
    table: ProposerTable
    agent_tokens: int
    """Tokens the agents generated for their proposals in this call (the search's own overhead, not the task's)."""
    agent_tokens_by: dict[str, int] = field(default_factory=dict)
    """The same, per agent proposer (`agent`, `agent_single`)."""


def make_study(space: str, settings: dict[str, Any]) -> Study:
    """The named space with `settings` (its factory's keywords: total_budget, solutions, ...; and `PARAM.OPTION`
    keys, each a dimension of the values given over an option of the space's verifier spec: `verifier.samples`), or
    a one-line error."""
    if space not in STUDIES:
        raise ValueError(f"space must be one of {', '.join(STUDIES)}, got {space!r}")
    known = list(inspect.signature(STUDIES[space]).parameters)
    options = {k: v for k, v in settings.items() if option_of(k) is not None}
    unknown = sorted(set(settings) - set(known) - set(options))
    if unknown:
        raise ValueError(f"space {space} has no setting {unknown[0]!r} (it has {', '.join(known)}, and PARAM.OPTION "
                         "for an option of its verifier)")
    study = STUDIES[space](**{k: v for k, v in settings.items() if k not in options})
    if not options:
        return study
    values = {k: tuple(v) if isinstance(v, list | tuple) else (v,) for k, v in options.items()}
    return vary(study, values)


def check_proposers(names: Sequence[str]) -> tuple[str, ...]:
    unknown = [n for n in names if n not in PROPOSERS]
    if unknown or not names:
        raise ValueError(f"proposers must be among {', '.join(PROPOSERS)}, got {', '.join(names) or 'none'}")
    return tuple(dict.fromkeys(names))


def check_agent(*, agent_tokens: object, agent_budget: object, candidates: object) -> None:
    """Refuse in one line, before any engine starts, an agent setting the proposers would refuse later."""
    for name, value in (("agent_tokens", agent_tokens), ("agent_budget", agent_budget), ("candidates", candidates)):
        if value is None and name == "agent_budget":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number ≥ 1, got {value!r}")


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
                         agent_tokens: int = AGENT_TOKENS, agent_budget: int | None = None,
                         candidates: int = CANDIDATES) -> AllocationSearch:
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
    spent = [0, 0]  # tokens generated by `agent`, by `agent_single`
    shape, batch = reply_regex(study.space), candidates_regex(study.space, candidates)

    def agenttts(seed: int) -> AgentTTSProposer:
        meter = _meter(agent_budget)  # one per search: every call of this seed's search is charged to it
        candidates_call = _agent(engine, spent, 0, agent_tokens, batch, meter, system=SYSTEM, salt=seed)
        insight_call = _agent(engine, spent, 0, agent_tokens, None, meter, system=SYSTEM, salt=seed)  # free text
        return AgentTTSProposer(generate=candidates_call, reflect=insight_call, seed=seed, candidates=candidates)

    makers: dict[str, Callable[[int], Proposer]] = {
        "grid": lambda s: GridProposer(),
        "random": lambda s: RandomProposer(seed=s),
        "bayesian": lambda s: BayesianProposer(seed=s),
        "agent": agenttts,
        "agent_single": lambda s: AgentProposer(generate=_agent(engine, spent, 1, agent_tokens, shape,
                                                                _meter(agent_budget), salt=s),
                                                seed=s, name="agent_single"),
    }
    table = await compare_proposers(space=study.space, evaluate=evaluate, seeds=seeds, trials=trials,
                                    proposers={n: makers[n] for n in names}, log_dir=out / "searches")
    write_atomic(out / TABLE, (json.dumps(table.to_dict(), indent=2, default=str) + "\n").encode())
    return AllocationSearch(path=out, table=table, agent_tokens=sum(spent),
                            agent_tokens_by={"agent": spent[0], "agent_single": spent[1]})


def allocate(
    *,
    space: str = "genrm",
    proposers: Sequence[str] = DEFAULT_PROPOSERS,
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
    agent_budget: int | None = None,
    candidates: int = CANDIDATES,
) -> AllocationSearch:
    """Search `space` (genrm, sleep_time, beam, grm: see ttscale.allocsearch.spaces) with each of `proposers` for
    `trials` trials per search seed, against the full grid's optimum, on `task`'s first `limit` problems.

    `total_budget` (tokens per problem, or per query for sleep_time) bounds every allocation; `settings` are the
    space's other values (solutions=(1, 2, 4), ...; `"verifier.samples": (1, 2, 4)` varies an option of the
    space's verifier spec, here GRM's k). `engine`: a started `ttscale.Engine` to share, an engine
    object (a simulator in tests), or None to start one of `model`. Calling again with the same `out` resumes:
    cells and trials already done are read back. Works inside a running event loop too. `agent_tokens`: tokens
    of one agent reply at most; `agent_budget`: tokens the agent may generate in one search (every call is charged
    before it is sent, and a search whose agent has nothing left proposes seeded random points); `candidates`: the
    `agent`'s candidates per iteration. An engine the call starts writes its output to `out`'s engine.log
    (`verbose=True`: to this terminal).
    """
    from ttscale.engine.spawn import refuse_in_spawned_bootstrap
    from ttscale.running.session import call_config, drive, stamp

    refuse_in_spawned_bootstrap("ttscale.allocate")
    given = {**(settings or {}), **({"total_budget": total_budget} if total_budget is not None else {})}
    check_agent(agent_tokens=agent_tokens, agent_budget=agent_budget, candidates=candidates)
    study = make_study(space, given)  # everything refused in one line before any engine starts
    names = check_proposers(proposers)
    config = call_config(engine, model=model, engine_args=None, config=None)
    root = Path(out) if out is not None else Path("allocations") / f"{space}-{stamp()}"
    manifest = _manifest(space=space, settings=given, names=names, seeds=seeds, trials=trials, task=task,
                         task_options=task_options, limit=limit, seed=seed)
    check_search(out=root, manifest=manifest, study=study, engine_config=config)

    async def work(started: Any) -> AllocationSearch:
        if started is None:
            from ttscale.running.launch import start_logged

            # The search's folder first, for the engine's log: a start that fails leaves a search that resumes.
            _open_search(root, manifest)
            own = await start_logged(config, log=None if verbose else root / ENGINE_LOG)
            try:
                return await work(own)
            finally:
                from ttscale.engine.logs import capture_output

                with capture_output(None if verbose else root / ENGINE_LOG):  # vLLM logs its shutdown too
                    await own.close()
        return await run_allocation(space=space, settings=given, proposers=proposers, seeds=seeds, trials=trials,
                                    task=task, limit=limit, out=root, engine=started, engine_config=config,
                                    task_options=task_options, seed=seed, agent_tokens=agent_tokens,
                                    agent_budget=agent_budget, candidates=candidates)

    return drive(engine, work)


def _meter(agent_budget: int | None) -> Any:
    """The ledger of one search's agent calls (None: unbounded, each call still capped at `agent_tokens`)."""
    if agent_budget is None:
        return None
    from ttscale.budget import Budget, Ledger

    return Ledger(Budget(limit=float(agent_budget)))


def _agent(engine: Any, spent: list[int], slot: int, max_tokens: int, shape: str | None, meter: Any = None, *,
           system: str | None = None, salt: int = 0) -> Callable[[str], Any]:
    """The agent's `generate`: one chat turn on `engine`, seeded by the search's seed (`salt`) and the prompt (the
    same search and history, the same reply, so a resumed search replays it; another seed, another sample),
    constrained to the reply's JSON shape when `shape` is given (`reply_regex`, `candidates_regex`: allowed values
    per dimension; budget and repeats are still checked when the reply is read). With `meter` (a `Ledger`) each
    call reserves its worst case first, lowered to what is left, and raises `AgentBudgetSpent` when nothing is."""
    from ttscale.schema import SamplingParams

    async def generate(prompt: str) -> str:
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        ids = engine.chat_prompt(messages)
        seed = int.from_bytes(hashlib.blake2b(f"{salt}\n{prompt}".encode(), digest_size=4).digest(), "big") % 2**31
        asked = SamplingParams(n=1, temperature=0.7, max_tokens=max_tokens, regex=shape)
        held = None
        if meter is not None:
            held = meter.reserve(asked, prompt_tokens=len(ids))
            if held is None:
                raise AgentBudgetSpent(f"the agent's budget of {meter.budget} per search is spent")
            asked = held.params
        generation: Any = None
        try:
            generation = await engine.generate(ids, asked, seed=seed)
        finally:
            if held is not None:
                meter.settle(held, generation)
        spent[slot] += sum(c.num_tokens for c in generation.completions)
        return generation.completions[0].text if generation.completions else ""

    return generate
