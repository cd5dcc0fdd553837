"""Compute-optimal routing (Snell et al., arXiv:2408.03314, §3.2 and §5): from a sweep to a per-difficulty policy.

- `difficulty`: a problem's difficulty bin for the model — oracle (its pass@1) or predicted from a cheap probe;
- `holdout`: the held-out pool the probe and pass@1 come from, apart from every sample a candidate is scored on;
- `outcomes`: a finished sweep read back, per cell and as the outcomes a policy learns from;
- `policy`: the best (strategy, parameters) per bin and budget, cross-validated;
- `allocation`: grants under a total budget, shared by the problems one pool ledger funds;
- `savings`: tokens saved at equal accuracy against the best fixed baseline (P4);
- `replay`: smaller sweep cells derived from a pool generated once at the largest budget.

The `adaptive` strategy (strategies/adaptive.py) runs a policy per problem.
"""
