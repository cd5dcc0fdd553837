"""Building blocks strategies share, above the verifiers and search they use.

`sampling` (a pool of samples, log-prob confidence, a vote or a verifier's pick), `thinking` (a reasoning model's
thinking block: its delimiters, budgets and the answer after it). The former paths `ttscale.sampling` and
`ttscale.thinking` are these modules.
"""
