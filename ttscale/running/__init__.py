"""Running: one run's pieces, below the pipeline that carries it out (`ttscale.pipeline`).

`run_spec` (the run specification, its flags and its stored form) over `flags` (the flags every backend, task and
strategy declares); `runner` (a run prepared, its problems solved: writes no run file; each problem's engine is
`ttscale.kit.context`'s `SeededEngine`) with `progress`; `distributed/` (the problems on Ray workers);
`launch` (an engine started as a run starts it); `session` (the shared engine handle `ttscale.Engine` and the
driver of a call's coroutine); `signals` (stop signals: a run ends with its records kept).
"""
