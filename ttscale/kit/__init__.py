"""The strategy kit: what a strategy, a verifier and search declare and talk to, below all three.

`params` (a strategy's parameters and the `@strategy` decorator) with `capabilities` (what else it can do: replay,
held-out cells, adaptive routing); `context` (a strategy's one door to the engine, metered by its ledger, over the
engine seeded for its problem: `SeededEngine`) with `stages` (work the problems of a run share, done once per key);
`selection` (votes and the best-scored sample).
The former paths `ttscale.params`, `.capabilities`, `.context`, `.stages` and `.selection` are these modules.
"""
