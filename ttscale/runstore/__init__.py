"""The run store: a run directory and its files, written and read in one place.

`writer` (the write side as the run pipeline calls it: `open_run`, then a `RunWriter`'s `started`, `record` and
`finish`), `storage` (`RunDir`: the directory, its lock, results.jsonl appended and fsynced per problem, summary.json),
`runfiles` (appending a line whole, reading whole lines, writing atomically), `runformat` (the files' format
versions and the one migration of older ones), `run_config` (config.json: the identity `--resume` checks, the
spec, the machine), `records` and `runs` (the one reader of run directories that fit, report, compare and
`load_runs` share), `summary` (summary.json from the records).
"""
