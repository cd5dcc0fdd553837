"""Comparisons of strategies, and what a claim needs.

`paired` (`ttscale.compare`: paired multi-seed comparisons, their verdicts and compare.json) over `markdown` (its
report) over `until_decided` (the sequential driver: batches until the claim is decided); `environments` (arms
split by engine environment); `planning` (`ttscale.plan`: the problems a claim needs, from a pilot comparison).
The former path `ttscale.comparison` is the module `paired`.
"""
