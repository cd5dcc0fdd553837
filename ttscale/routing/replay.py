"""A sweep's smaller budgets replayed from the stored pool of its largest one, and SC vs GenRM at matched compute.

`derive_cell` / `derive_record` write a cell from its source's records (see ttscale.sweeps: generate once,
evaluate every budget); `replay_pool` replays the sample-pool strategies' requests on a real ledger.

`replay_genrm` gives the record a GenRM run with (S, V) at budget b would write, from a source run
with S_B ≥ S solutions and V_B ≥ V chains each (its `info["chains"]` stores every chain's verdict and
token counts): the first S solutions and the first V chains of each, on a real `Ledger` of budget b
that reserves and settles what the strategy would send, with the chains' true token counts. Under the
i.i.d. assumption of ttscale.sweeps (the samples of one prompt do not depend on n or on other requests),
the first k of a stored list are distributed as a run's k. Refused when the run would send anything the
replay cannot reproduce: a request the ledger would cap, more solutions or chains than stored, or a
source that was itself capped (its samples would be shorter than an uncapped run's).

`best_at_compute` is the paper's comparison ("when to solve, when to verify", Singhi et al.,
arXiv:2504.01005, §4): at each compute level L, the best cell of each strategy whose mean ledger tokens
per problem (policy + verifier generated tokens actually spent) are ≤ L.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from ttscale.budget import Ledger
from ttscale.engine.base import context_length
from ttscale.evals.metrics import wilson_interval
from ttscale.runner import Prepared, check_resume, write_config
from ttscale.schema import Completion, Generation, Problem, RunRecord, Sample, SamplingParams
from ttscale.selection import best_scored, majority_vote, weighted_vote
from ttscale.storage import CONFIG, SUMMARY, RunDir
from ttscale.summary import summarize

if TYPE_CHECKING:
    from ttscale.sweeps import Cell

POOL_STRATEGIES = ("best_of_n", "self_consistency", "sleep_time")
"""Strategies whose record is a pool of independent samples: a smaller budget is read from a larger one's pool."""
DIFFICULTY_POOLS = ("best_of_n", "self_consistency")
"""The pools a held-out difficulty estimate (routing.holdout) reads: the problem's own prompt, nothing shared."""


def replay_genrm(ledger: Ledger, p: Any, samples: list[Sample], source: Mapping[str, Any], *,
                 prompt: int) -> tuple[str | None, list[Sample], dict[str, Any]] | str:
    """(prediction, samples, info) of a GenRM run under `ledger` with params `p`; or why it cannot be replayed."""
    from ttscale.strategies.genrm import answer_info, budget_split, plan_verifications
    from ttscale.verifiers.genrm import GenRM, Verdict

    stored = (source.get("info") or {}).get("chains")
    if not isinstance(stored, list) or len(stored) != len(samples):
        return "the source stores no per-chain verdicts"
    if (source.get("ledger") or {}).get("capped_requests"):
        return "the source's own requests were capped"
    chain = p.verify_tokens + 1
    c = ledger.affordable_samples(p.max_tokens)
    s, _ = budget_split(c, lam=chain / p.max_tokens, solution_share=p.solution_share, s=p.n, v=p.verifications)
    asked = SamplingParams(n=s, temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_tokens)
    if not _spend(ledger, asked, [x.num_tokens for x in samples[:s]], prompt=prompt, role="policy") or s > len(samples):
        return f"S={s} solutions do not come from the source's {len(samples)} uncapped"
    v = plan_verifications(remaining=ledger.remaining, solutions=s, chain_tokens=chain, wanted=p.verifications)
    # A record written before unreadable verdicts were dropped stores them as source "default" (r = 0.5): read as
    # unreadable, so the replay scores them by the reference's rule (left out of the mean).
    kept = [[Verdict(r=None if src in ("unreadable", "default") else float(r), chain_tokens=int(t),
                     verdict_tokens=int(k), source="unreadable" if src == "default" else src)
             for r, t, k, src in x[:v]] for x in stored[:s]]
    if any(len(x) < v for x in kept):
        return f"V={v} chains per solution and the source has {min(len(x) for x in kept)}"
    if any(x.chain_tokens > p.verify_tokens for vs in kept for x in vs):
        return "the source's chains are longer than verify_tokens"
    chains = SamplingParams(n=v, temperature=p.verify_temperature, max_tokens=p.verify_tokens)
    one = SamplingParams(n=1, temperature=0.0, max_tokens=1)
    # The run reserves every solution's chains before any returns (they are in flight together), then settles.
    # Prompt tokens of the verifier are not stored: 0 (they cost nothing under a token budget).
    held = [ledger.reserve(chains, prompt_tokens=0, role="verifier") for _ in kept]
    if any(r is None or r.params != chains for r in held):
        for r in held:
            if r is not None:
                ledger.settle(r, None)
        return "the verifications would not fit uncapped"
    for r, vs in zip(held, kept, strict=True):
        assert r is not None
        batch = tuple(Completion(text="", token_ids=(0,) * x.chain_tokens) for x in vs)
        ledger.settle(r, Generation(completions=batch, prompt_tokens=0))
    for vs in kept:
        for x in vs:
            if x.verdict_tokens and not _spend(ledger, one, [x.verdict_tokens], prompt=0, role="verifier"):
                return "an appended verdict would not fit"
    verifier = GenRM(verifications=v, max_tokens=p.verify_tokens, temperature=p.verify_temperature)
    scores = [verifier.score(vs) for vs in kept]
    sub = [replace(x, score=r) for x, r in zip(samples[:s], scores, strict=True)]
    if p.select == "weighted":
        prediction, votes = weighted_vote(sub)
    else:
        best = best_scored(sub)
        prediction, votes = (best.answer if best else None), {}
    usage = ledger.usage
    info = answer_info(p, s=s, v=v, verdicts=kept, scores=scores, votes=votes,
                       policy_tokens=usage["policy"].generated_tokens,
                       verifier_tokens=usage["verifier"].generated_tokens)
    info["replayed"] = "exact generated tokens; the verifier's prompt tokens are not stored (0)"
    return prediction, sub, info


#: Parameters a derived cell may take other values of than its source (the replay subsamples or cuts them).
VARIED = {"genrm": ("n", "verifications"), "budget_forcing": ("thinking_budget",), "deepconf": ("eta", "score")}


def deepconf_derivable(entry: Any, budgets: int) -> bool:
    """Offline DeepConf re-scores its stored pool (every trace keeps its token confidences): any η, trace score
    or smaller budget of an entry replays from one pool. Online traces were stopped by their own run's threshold."""
    varied = any(len(entry.params.get(k, ())) > 1 for k in VARIED["deepconf"])
    return entry.params.get("mode", ["offline"]) == ["offline"] and (budgets > 1 or varied)


def thinking_derivable(entry: Any) -> bool:
    """Budget forcing replays smaller thinking budgets when nothing is forced (waits 0): a chain that ended
    its thinking by itself within a budget b is what a run at b draws (the same prefix, the same answer)."""
    return len(entry.params.get("thinking_budget", ())) > 1 and entry.params.get("waits", ["0"]) == ["0"]


def genrm_source(strategy: str, entry: Any, params: dict[str, str]) -> dict[str, str]:
    """The grid point a sweep replays a cell from: a GenRM entry's largest n and verifications (when explicit),
    a budget-forcing entry's largest thinking budget (when nothing is forced)."""
    if strategy == "budget_forcing" and thinking_derivable(entry):
        values = entry.params["thinking_budget"]
        return {**params, "thinking_budget": max(values, key=int)} if all(v.isdigit() for v in values) else params
    if strategy == "deepconf":  # one pool for every η and score: the grid's first of each draws it
        return {**params, **{k: entry.params[k][0] for k in VARIED["deepconf"] if entry.params.get(k)}}
    if strategy != "genrm":
        return params
    top = dict(params)
    for key in ("n", "verifications"):
        values = entry.params.get(key, [])
        if len(values) > 1 and all(v.isdigit() for v in values):
            top[key] = max(values, key=int)
    return top


def _spend(ledger: Ledger, asked: SamplingParams, lengths: Sequence[int], *, prompt: int, role: Any) -> bool:
    """Reserve `asked` and settle `lengths`; False (nothing spent) when the ledger would cap or refuse it."""
    reservation = ledger.reserve(asked, prompt_tokens=prompt, role=role)
    if reservation is None:
        return False
    if reservation.params != asked or len(lengths) != asked.n:
        ledger.settle(reservation, None)
        return False
    batch = tuple(Completion(text="", token_ids=(0,) * k) for k in lengths)
    ledger.settle(reservation, Generation(completions=batch, prompt_tokens=prompt))
    return True


def best_at_compute(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per compute level (every cell's mean ledger tokens per problem), the best cell of each strategy within it.

    `rows` need strategy, candidate, budget, seed, mean_tokens, correct (count) and problems. The best is
    the highest accuracy (ties: fewer tokens); its 95% Wilson interval comes with it. A strategy with no cell
    within a level is absent there. Levels are the cells' own token counts, so every comparison is at ≤ L.
    """
    for row in rows:
        if row["problems"] < 1 or not 0 <= row["correct"] <= row["problems"] or row["mean_tokens"] < 0:
            raise ValueError(f"best_at_compute needs 0 ≤ correct ≤ problems, problems ≥ 1, tokens ≥ 0; got {dict(row)}")
    levels = sorted({round(float(r["mean_tokens"]), 1) for r in rows})
    out = []
    for level in levels:
        best: dict[str, dict[str, Any]] = {}
        for r in sorted(rows, key=lambda r: (r["mean_tokens"], str(r["candidate"]), r["seed"])):
            if round(float(r["mean_tokens"]), 1) > level:
                continue
            accuracy = r["correct"] / r["problems"]
            held = best.get(r["strategy"])
            if held is None or accuracy > held["accuracy"]:
                low, high = wilson_interval(int(r["correct"]), int(r["problems"]))
                best[r["strategy"]] = {"candidate": r["candidate"], "budget": r["budget"], "seed": r["seed"],
                                       "accuracy": accuracy, "ci95": [round(low, 4), round(high, 4)],
                                       "mean_tokens": round(float(r["mean_tokens"]), 1)}
        out.append({"tokens": level, "best": best})
    return out


# -- deriving a smaller budget from the stored pool -----------------------------------------------


def derive_cell(prepared: Prepared, run_dir: RunDir, cell: Cell, source_dir: RunDir) -> str | None:
    """Write the cell from its source's pool; the reason it cannot be derived, or None when it was."""
    # Every parameter but those the replay subsamples (GenRM's S and V) must be the source's: a max_tokens
    # capped at this smaller budget (task defaults), or a sweep resumed across versions, draws other samples.
    varied = VARIED.get(prepared.strategy_name, ())
    stored = (source_dir.read_config().get("identity") or {}).get("params")
    stored = {k: v for k, v in stored.items() if k not in varied} if isinstance(stored, dict) else {}
    current = {k: v for k, v in json.loads(json.dumps(asdict(prepared.params), default=str)).items()
               if k not in varied}
    if stored != current:
        return f"the source ran with other parameters ({_differing(stored, current)})"
    sources = {str(r["id"]): r for r in source_dir.records()}
    # The context limit the source's engine ran with (the model's own when none was set): its samples obey it.
    # An engine that records none (a simulator) had none that mattered.
    ran = source_dir.read_config().get("environment", {}).get("engine") or {}
    # A configured -1 (fit to memory) or None is no number: the recorded limit in force is.
    limit = context_length(prepared.spec.engine.max_model_len, ran.get("max_model_len"),
                         (ran.get("config") or {}).get("max_model_len"))
    records = []
    rest: dict[str, str] = {}  # budget forcing: problems whose chains thought past this budget run afresh
    for problem in prepared.problems:
        source = sources.get(problem.id)
        if source is None:
            return f"the source has no record of {problem.id}"
        record = derive_record(prepared, problem, source, source_id=str(cell.source), max_model_len=limit)
        if isinstance(record, str) and prepared.strategy_name == "budget_forcing":
            rest[problem.id] = record
        elif isinstance(record, str):
            return f"{problem.id}: {record}"
        else:
            records.append(record)
    if run_dir.has_results():
        check_resume(run_dir, prepared)
    else:
        run_dir.check_new()
    with run_dir.open_for_writing():
        if not (run_dir.path / CONFIG).is_file():
            engine = source_dir.read_config().get("environment", {}).get("engine")
            write_config(run_dir, prepared, {"derived_from": str(cell.source), "source_engine": engine},
                         argv=["derived", str(cell.source)])
        done = run_dir.finished_ids()
        for record in records:
            if record["id"] not in done:
                run_dir.append(record)
        if rest:  # the sweep runs the others into this directory, as a resume does
            return f"{len(rest)} of {len(prepared.problems)} problems need their own run ({next(iter(rest.values()))})"
        summary = summarize(records, budget=prepared.budget, wall_seconds=0.0)
        summary.update(strategy=prepared.strategy_name, task=prepared.spec.task, budget=str(prepared.budget),
                       resumed=False, derived_from=cell.source)
        run_dir.write_json(SUMMARY, summary)
    return None


def derive_thinking(prepared: Prepared, source: dict[str, Any], *, source_id: str) -> dict[str, Any] | str:
    """A budget-forcing record at a smaller thinking budget: the source's, when every chain ended its thinking
    by itself within that budget and nothing was forced; else why not (the chain would be cut: a new answer)."""
    p = prepared.params
    chains = (source.get("info") or {}).get("chains") or []
    ledger = source.get("ledger") or {}
    if len(chains) != p.n or len(source.get("samples") or []) != p.n:
        return "the source has another number of chains"
    for chain in chains:
        if chain.get("waits") or chain.get("thinking_cut") or chain.get("ended_at") is None:
            return "a chain was cut or forced"
        if chain["thinking_tokens"] > p.thinking_budget:
            return f"a chain thought {chain['thinking_tokens']} tokens, past {p.thinking_budget}"
    if float(ledger.get("spent", 0.0)) > prepared.budget.limit or prepared.budget.unit != "tokens":
        return "the source spent more than this budget"
    info = {**source["info"], "thinking_budget": p.thinking_budget, "derived_from": source_id}
    limits = {"budget": prepared.budget.limit}
    return {**source, "ledger": {**ledger, **{k: v for k, v in limits.items() if k in ledger}}, "info": info}


def _differing(stored: dict[str, Any], current: dict[str, Any]) -> str:
    keys = sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))
    return ", ".join(f"{k}: {stored.get(k)!r} vs {current.get(k)!r}" for k in keys) or "unknown"


def derive_record(
    prepared: Prepared, problem: Problem, source: dict[str, Any], *, source_id: str, max_model_len: int | None = None
) -> dict[str, Any] | str:
    """The record a run at `prepared.budget` would write, from the source's record; or why there is none."""
    if source.get("error"):
        return "the source record is an error"
    samples = [Sample(**s) for s in source.get("samples", [])]
    src_ledger = source.get("ledger") or {}
    verifier = src_ledger.get("verifier") or {}
    policy_calls = max(1, int(src_ledger.get("calls", 0)) - int(verifier.get("calls", 0)))
    prompt = (int(src_ledger.get("prompt_tokens", 0)) - int(verifier.get("prompt_tokens", 0))) // policy_calls
    ledger, p, name = prepared.ledger(), prepared.params, prepared.strategy_name
    if name == "budget_forcing":
        return derive_thinking(prepared, source, source_id=source_id)
    info: dict[str, Any]
    if name in POOL_STRATEGIES:
        if verifier.get("calls"):
            return "its scorer spent compute"
        taken = replay_pool(ledger, p, [s.num_tokens for s in samples], prompt_tokens=prompt,
                            max_model_len=context_length(max_model_len, prepared.spec.engine.max_model_len) or 1 << 30)
        if isinstance(taken, str):
            return taken
        sub = samples[:taken]
        scorer = getattr(p, "verifier", None)
        if scorer is not None:  # as `sampling.score_outcomes` counts them in a run
            ledger.tally("reward_evaluations", len(sub))
        if name == "best_of_n":
            best = best_scored(sub)
            prediction = best.answer if best else None
            info = {"n": len(sub), "scorer": scorer or "mean_logprob", "best_score": best.score if best else None}
        else:
            prediction, votes = majority_vote(sub) if scorer is None else weighted_vote(sub)
            info = {"n": len(sub), "votes": dict(votes)}
        if name == "sleep_time":  # the context's notes are the source's: the same sleep-time stage, read again
            from ttscale.strategies.sleep_time import SLEEP_INFO

            info.update({k: v for k, v in (source.get("info") or {}).items() if k in SLEEP_INFO})
            if "sleep_tokens_amortised" in src_ledger:
                ledger.extra["sleep_tokens_amortised"] = src_ledger["sleep_tokens_amortised"]
            ledger.tally("test_tokens", sum(s.num_tokens for s in sub))
    elif name == "deepconf":
        if p.mode != "offline":
            return "online traces were stopped by their own run's threshold"
        taken = replay_pool(ledger, p, [s.num_tokens for s in samples], prompt_tokens=prompt,
                            max_model_len=context_length(max_model_len, prepared.spec.engine.max_model_len) or 1 << 30)
        if isinstance(taken, str):
            return taken
        if any(s.confidences is None for s in samples[:taken]):
            return "the source's samples carry no token confidences"
        from ttscale.strategies.deepconf import select_offline

        prediction, sub, info = select_offline(samples[:taken], p)
        info["mode"] = "offline"
    elif name == "genrm":
        result = replay_genrm(ledger, p, samples, source, prompt=prompt)
        if isinstance(result, str):
            return result
        prediction, sub, info = result
    else:
        return f"{name} is not a sample-pool strategy"
    info["derived_from"] = source_id
    return RunRecord(id=problem.id, strategy=name, prediction=prediction, reference=problem.reference,
                     correct=bool(prepared.task.grade(prediction, problem)), ledger=ledger.to_dict(),
                     samples=[s.to_dict() for s in sub], level=problem.level, info=info).to_json()


def replay_pool(ledger: Ledger, p: Any, lengths: list[int], *, prompt_tokens: int, max_model_len: int) -> int | str:
    """How many pool samples `sample_pool` takes under `ledger`, settling their true lengths; or why it cannot tell."""
    taken = 0
    while True:
        n = p.n if p.n is not None else ledger.affordable_samples(p.max_tokens)
        if n < 1:
            return taken
        # What Context.generate sends: max_tokens lowered to the model's room after the prompt, then to the budget.
        asked = SamplingParams(n=n, temperature=p.temperature, top_p=p.top_p,
                               max_tokens=min(p.max_tokens, max_model_len - prompt_tokens))
        reservation = ledger.reserve(asked, prompt_tokens=prompt_tokens)
        if reservation is None:
            return taken
        sent = reservation.params
        assert sent is not None
        if (sent.n, sent.max_tokens) != (asked.n, asked.max_tokens):
            ledger.settle(reservation, None)
            return "the ledger would truncate its samples below the pool's max_tokens"
        if taken + n > len(lengths):
            ledger.settle(reservation, None)
            return f"it needs {taken + n} samples and the pool has {len(lengths)}"
        batch = tuple(Completion(text="", token_ids=(0,) * k) for k in lengths[taken: taken + n])
        ledger.settle(reservation, Generation(completions=batch, prompt_tokens=prompt_tokens))
        taken += n
        if not p.refill:
            return taken
