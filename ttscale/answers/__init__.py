"""Answers: the answer a completion states, and whether two answers are equal.

Below the tasks, selection and verifiers that all use it (each imports it; it imports nothing of ttscale):
`extract` (the answer a model's text states, and by which rule), `canonical` (light canonical forms, exact
numbers, hostile-input checks), `grading` (`math_equal`: canonical forms, then math-verify in the worker
processes of `pool`, which run `mv_worker`), `normalize` (an independent normalizer that cross-checks the
grader). `ttscale.verifiers` re-exports the grader's public names; the former module paths
`ttscale.verifiers.grading`, `.canonical`, `.pool` and `ttscale.evals.extract` are these modules.
"""
