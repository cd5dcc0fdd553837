"""Run summaries: accuracy with a 95% CI, token use against the budget, cache reuse, per-level accuracy."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ttscale.budget import Budget
from ttscale.messages import one_line
from ttscale.stats.proportions import wilson_interval

CrossCheck = Callable[..., Any]
"""The grader cross-check (`ttscale.verifiers.cross_check`): `(pairs, *, verdicts, max_examples)` -> a report with
`total`, `disagreements`, `rate`, `examples`. The layer that writes a summary hands it over; the run store below the
verifiers never imports them."""


def summarize(
    records: Sequence[dict[str, Any]],
    *,
    budget: Budget,
    wall_seconds: float,
    unfinished: Mapping[str, str] | None = None,
    cross_check: CrossCheck,
) -> dict[str, Any]:
    """The summary of finished `records`. `unfinished`: the problems a passing server fault left unfinished (id ->
    error); they are counted apart (`unfinished`, a few in `unfinished_examples`), never in the accuracy.
    `cross_check`: the grader cross-check its `grader_cross_check` comes from."""
    unfinished = unfinished or {}
    n = len(records)
    correct = sum(bool(r.get("correct")) for r in records)
    lo, hi = wilson_interval(correct, n)
    ledgers = [r.get("ledger") or {} for r in records]
    generated = [int(lg.get("generated_tokens", 0)) for lg in ledgers]
    spent = [float(lg.get("spent", 0.0)) for lg in ledgers]
    prompt = sum(int(lg.get("prompt_tokens", 0)) for lg in ledgers)
    cached = sum(int(lg.get("cached_prompt_tokens", 0)) for lg in ledgers)
    by_level: dict[Any, list[bool]] = defaultdict(list)
    for r in records:
        by_level[r.get("level")].append(bool(r.get("correct")))
    return {
        "problems": n,
        "correct": correct,
        "accuracy": correct / n if n else 0.0,
        "accuracy_ci95": [lo, hi],
        "errors": sum(1 for r in records if r.get("error")),
        "unfinished": len(unfinished),
        "unfinished_examples": [{"id": k, "error": v} for k, v in list(unfinished.items())[:5]],
        "budget_limit": budget.limit,
        "budget_unit": budget.unit,
        "over_budget": sum(1 for s in spent if s > budget.limit),
        "mean_spent": sum(spent) / n if n else 0.0,
        "mean_generated_tokens": sum(generated) / n if n else 0.0,
        "max_generated_tokens": max(generated, default=0),
        "total_generated_tokens": sum(generated),
        **_compute_means(ledgers),
        **_tree_means(ledgers),
        **_sample_means(ledgers),
        **_cuts(records, ledgers),
        "prompt_tokens": prompt,
        "cached_prompt_tokens": cached,
        "cached_prompt_share": cached / prompt if prompt else 0.0,
        "wall_seconds": round(wall_seconds, 3),
        "grader_cross_check": _cross_check(records, cross_check),
        "per_level": {
            str(level): {"problems": len(v), "accuracy": sum(v) / len(v),
                         "accuracy_ci95": list(wilson_interval(sum(v), len(v)))}
            for level, v in sorted(by_level.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))
            if level is not None
        },
    }


def spent(records: Sequence[dict[str, Any]]) -> float:
    """What `records` spent (their ledgers' `spent`): a run's `total_spent`, and what a resumed run's pool starts
    with."""
    return sum(float((r.get("ledger") or {}).get("spent", 0.0)) for r in records)


def _total(summary: dict[str, Any]) -> str:
    """A whole-task budget and what the run spent of it (summary.json's `total_budget`, `total_spent`)."""
    spent = summary.get("total_spent")
    return str(summary["total_budget"]) + ("" if spent is None else f", spent {float(spent):,.0f}")


def _sleep(summary: dict[str, Any]) -> str:
    """Sleep-time compute: the notes' tokens, once per context, and their share per query (not in generated tokens)."""
    per_query = f"{summary['mean_sleep_tokens_amortised']:.1f} amortised per query"
    if "total_sleep_tokens" not in summary:
        return per_query
    return f"{summary['total_sleep_tokens']} over {summary['contexts']} contexts, {per_query}"


def _verifier(summary: dict[str, Any]) -> str:
    """The verifier's engine requests per problem, and its generations where the ledger kept them apart."""
    calls = f"{summary['mean_verifier_calls']:.1f} requests"
    if "mean_verifier_samples" not in summary:
        return calls
    return f"{summary['mean_verifier_samples']:.1f} generations in {calls} (not in samples)"


def _executed(summary: dict[str, Any]) -> str:
    count = int(summary["grader_cross_check"].get("executed", 0))  # absent from summaries written before it existed
    return f" ({count} graded by running their tests, not compared)" if count else ""


def _unfinished(summary: dict[str, Any]) -> str:
    count = int(summary.get("unfinished", 0))  # absent from summaries written before it existed
    return f"; {count} unfinished (server faults): --resume runs them again" if count else ""


def unfinished_note(summary: dict[str, Any]) -> str | None:
    """One line on the problems a passing server fault left unfinished, with the first one's error (None: none)."""
    count = int(summary.get("unfinished") or 0)
    if not count:
        return None
    example = (summary.get("unfinished_examples") or [{}])[0]
    return (f"{count} problem{'s' * (count > 1)} did not finish (e.g. {example.get('id')}: "
            f"{one_line(example.get('error'), limit=300)})")


def _cross_check(records: Sequence[dict[str, Any]], cross_check: CrossCheck) -> dict[str, Any]:
    """How often an independent answer normalizer disagrees with the task's grader on this run.

    Answers graded by running them (a code task's samples carry their `execution`) are left out: a program's
    verdict is its tests', and comparing its text with the reference solution's says nothing (`executed`).
    """
    def executed(record: dict[str, Any]) -> bool:
        return any(isinstance(s, dict) and "execution" in s for s in record.get("samples") or ())

    textual = [r for r in records if not executed(r)]
    report = cross_check(
        [(r.get("prediction"), str(r.get("reference"))) for r in textual],
        verdicts=[bool(r.get("correct")) for r in textual],
        max_examples=5,
    )
    return {
        "executed": len(records) - len(textual),
        "compared": report.total,
        "disagreements": report.disagreements,
        "rate": report.rate,
        "examples": [list(e) for e in report.examples],
    }


def _cuts(records: Sequence[dict[str, Any]], ledgers: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Final samples stopped by a length limit (max_tokens or the context), and samples the context cut."""
    cut = [int(lg.get("cut_samples", 0)) for lg in ledgers]
    samples = sum(len(r.get("samples") or ()) for r in records)
    phases = {  # sequential strategies: thinking and answer tokens; sleep-time: test-time and amortised sleep tokens
        f"mean_{key}": sum(float(lg.get(key, 0)) for lg in ledgers) / len(ledgers)
        for key in ("thinking_tokens", "answer_tokens", "test_tokens", "sleep_tokens_amortised")
        if any(key in lg for lg in ledgers)
    }
    # Sleep-time stages are computed once per context: their tokens count once however many queries read them.
    stages = {str(info["context_id"]): int(info.get("sleep_tokens", 0)) for r in records
              if isinstance(info := r.get("info"), dict) and "context_id" in info and "sleep_tokens" in info}
    if stages:
        phases.update(contexts=len(stages), total_sleep_tokens=sum(stages.values()))
    return {
        **phases,
        "cut_samples": sum(cut),
        "cut_sample_share": sum(cut) / samples if samples else 0.0,
        "problems_with_cut_samples": sum(1 for c in cut if c),
        "context_cut_samples": sum(int(lg.get("context_cut_samples", 0)) for lg in ledgers),
    }


def _sample_means(ledgers: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The policy's samples (generations of an answer) per problem, and the verifier's requests and generations apart:
    the ledger's `samples` counts both roles, so a judge's verdicts once doubled best-of-N's "samples / problem".
    A ledger written before the verifier's were counted apart keeps its one count (`mean_verifier_samples` absent)."""
    n = len(ledgers)
    if not n:
        return {"mean_samples": 0.0}
    verifiers: list[dict[str, Any]] = [v if isinstance(v := lg.get("verifier"), dict) else {} for lg in ledgers]
    apart = all("samples" in v for v in verifiers)
    judged = sum(int(v.get("samples", 0)) for v in verifiers) if apart else 0
    out = {"mean_samples": (sum(int(lg.get("samples", 0)) for lg in ledgers) - judged) / n,
           "mean_verifier_calls": sum(int(v.get("calls", 0)) for v in verifiers) / n}
    if apart:
        out["mean_verifier_samples"] = judged / n
    return out


def _tree_means(ledgers: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Mean tree statistics per problem, for the strategies that search a tree."""
    trees = [lg["tree"] for lg in ledgers if isinstance(lg.get("tree"), dict)]
    if not trees:
        return {}
    keys = ("peak_unique_kv_tokens", "reference_kv_tokens", "steps", "nodes", "verifier_calls")
    return {f"mean_tree_{k}": sum(float(t.get(k, 0)) for t in trees) / len(trees) for k in keys}


def _compute_means(ledgers: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Mean FLOPs, memory bytes and eFLOPs per problem, when the cost model priced the run."""
    out = {}
    for key in ("flops", "memory_bytes", "eflops"):
        values = [float(lg[key]) for lg in ledgers if key in lg]
        if values and len(values) == len(ledgers):
            out[f"mean_{key}"] = sum(values) / len(values)
    return out


def format_table(summary: dict[str, Any]) -> str:
    """The results table the CLI prints."""
    lo, hi = summary["accuracy_ci95"]
    rows = [
        ("strategy", summary.get("strategy", "")),
        ("task", summary.get("task", "")),
        ("budget", summary.get("budget", "")),
        *([("total budget", _total(summary))] if "total_budget" in summary else []),
        ("problems", f"{summary['problems']} ({summary['errors']} errors)" + _unfinished(summary)),
        ("accuracy", f"{summary['accuracy']:.3f}  (95% CI {lo:.3f}-{hi:.3f})"),
        (
            "generated tokens",
            f"mean {summary['mean_generated_tokens']:.0f}, max {summary['max_generated_tokens']}",
        ),
        ("samples / problem", f"{summary['mean_samples']:.1f}"),
        *([("sleep tokens", _sleep(summary))] if "mean_sleep_tokens_amortised" in summary else []),
        *([("verifier / problem", _verifier(summary))] if summary.get("mean_verifier_calls") else []),
        *(
            [("compute / problem", f"{summary['mean_flops']:.3g} FLOPs, {summary['mean_eflops']:.3g} eFLOPs")]
            if "mean_eflops" in summary
            else []
        ),
        ("prompt tokens cached", f"{summary['cached_prompt_share']:.1%}"),
        *(
            [
                (
                    "tree / problem",
                    f"peak unique KV {summary['mean_tree_peak_unique_kv_tokens']:.0f} tokens, "
                    f"{summary['mean_tree_steps']:.1f} steps, {summary['mean_tree_verifier_calls']:.1f} verifier calls",
                )
            ]
            if "mean_tree_steps" in summary
            else []
        ),
        ("over budget", str(summary["over_budget"])),
        (
            "grader cross-check",
            f"{summary['grader_cross_check']['disagreements']} disagreements"
            f" in {summary['grader_cross_check']['compared']}" + _executed(summary),
        ),
        ("wall time", f"{summary['wall_seconds']:.1f} s"),
    ]
    for level, row in summary.get("per_level", {}).items():
        # A summary written before levels had their interval shows without one.
        lo, hi = row.get("accuracy_ci95") or (None, None)
        interval = f"95% CI {lo:.3f}-{hi:.3f}, " if lo is not None else ""
        rows.append((f"  level {level}", f"{row['accuracy']:.3f}  ({interval}n={row['problems']})"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
