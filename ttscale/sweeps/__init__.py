"""`ttscale sweep`: strategies × hyper-parameters × budgets × seeds over a task, stored like runs, resumable.

A sweep directory holds `sweep.json` (the grid) and one run directory per cell under `cells/`
(config.json, results.jsonl, summary.json: the files of `ttscale run`), so every cell can be read,
resumed or reported like any run. `ttscale sweep --resume DIR` skips finished cells and resumes the rest.

Generate once, evaluate every budget. For the strategies that declare a replay (`@strategy(Params,
replay=...)`, ttscale.kit.capabilities: the sample pools, GenRM, offline DeepConf, budget forcing) only the
largest budget is run; each smaller budget b is *derived* from the stored records by replaying, on a real
`Ledger` of budget b, the requests the strategy would send (the same n, max_tokens and refill rounds, capped
by the same rules) and handing each request the next stored samples, then selecting as the strategy does.
The derived record has the samples, prediction and token counts of a run at b under one assumption: the
samples of one prompt are i.i.d. draws whose distribution depends neither on the request's n nor on other
requests in flight (vLLM samples the n sequences of a request independently), so the first k samples of the
pool are distributed as a run's k samples. A cell is derived only when the replay needs no sample the pool
lacks, truncates nothing (a lowered max_tokens would change the samples) and the scorer costs nothing
(verifier tokens are not replayable); otherwise it is run directly. GenRM: the first S solutions and the
first V chains of each, with exact generated tokens; a grid over n and verifications runs only its largest
(S, V) at the largest budget and derives every other (S, V, budget) from it. Token budgets only: a FLOP
budget prices prompts and cache hits, which a replay does not know.

The package: `grid` (entries, cells, which are derived), `replay` (a cell written from its source's
records), `run` (the sweep directory, each cell run or derived), `holdout` (the held-out difficulty cell and
the difficulty it gives), `outcomes` (a finished sweep read back: tables, outcomes, the best cell per compute).
"""

from ttscale.sweeps.grid import HOLDOUT_SEED, SWEEP, Cell, GridEntry, SweepSpec, cell_dir, load_spec
from ttscale.sweeps.run import create_sweep, prepare_cell, run_cell, run_sweep

__all__ = ["HOLDOUT_SEED", "SWEEP", "Cell", "GridEntry", "SweepSpec", "cell_dir", "create_sweep", "load_spec",
           "prepare_cell", "run_cell", "run_sweep"]
