"""Scale-out on Ray: one engine per Ray actor, problems spread over the actors, results back to the driver.

The driver (the `ttscale run` process) keeps the run directory: its run pipeline (`ttscale.pipeline`) hands
problems to the workers of a `pool.RayWorkerPool`, appends each record as it comes back, and is the only writer
of the run files. A worker is a Ray
actor that owns one engine (one GPU on GPU machines, `cpus_per_worker` CPUs here) and solves a
problem exactly as a one-engine run does (`ttscale.running.runner.solve`, per-request seeds included), so
the results do not depend on the number of workers. A worker that dies is restarted by Ray; the
problems it had in flight go back to the queue and run again on whichever worker is free first.
A finished problem is never sent again: it is in results.jsonl, and resume skips it.

`import ttscale.running.distributed` does not import Ray; starting a pool does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class DistributedError(RuntimeError):
    """The pool cannot go on (Ray missing or unreachable, too few resources, every worker dead)."""


@dataclass(frozen=True, kw_only=True)
class DistributedConfig:
    """How many Ray workers, on which cluster, with what resources. Validated at construction."""

    workers: int | None = None
    """Engines (Ray actors) to start; None = one per GPU of the cluster, or 1 on a cluster without GPUs."""
    address: str | None = None
    """An existing Ray cluster (`ray://host:10001`, `host:6379` or `auto`); None = start one on this machine."""
    cpus_per_worker: float = 1.0
    """CPUs Ray reserves for each worker."""
    gpus_per_worker: float | None = None
    """GPUs Ray reserves for each worker; None = the engine's tensor_parallel_size on a cluster with GPUs, else 0."""
    max_restarts: int = 3
    """Times Ray restarts a worker that died, before the pool goes on without it."""
    max_attempts: int = 3
    """Worker deaths a problem may see; then it is recorded with an error instead of killing more workers."""
    start_timeout: float = 900.0
    """Seconds a worker's engine may take to start (each restart included)."""

    def __post_init__(self) -> None:
        if self.workers is not None and (not isinstance(self.workers, int) or self.workers < 1):
            raise ValueError(f"workers must be ≥ 1, got {self.workers!r}")
        if self.address is not None and not self.address.strip():
            raise ValueError("ray address must not be empty")
        if not (math.isfinite(self.cpus_per_worker) and self.cpus_per_worker > 0):
            raise ValueError(f"cpus_per_worker must be > 0, got {self.cpus_per_worker!r}")
        if self.gpus_per_worker is not None and not (
            math.isfinite(self.gpus_per_worker) and self.gpus_per_worker >= 0
        ):
            raise ValueError(f"gpus_per_worker must be ≥ 0, got {self.gpus_per_worker!r}")
        if not isinstance(self.max_restarts, int) or self.max_restarts < 0:
            raise ValueError(f"max_restarts must be ≥ 0, got {self.max_restarts!r}")
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError(f"max_attempts must be ≥ 1, got {self.max_attempts!r}")
        if not (math.isfinite(self.start_timeout) and self.start_timeout > 0):
            raise ValueError(f"start_timeout must be > 0 seconds, got {self.start_timeout!r}")


__all__ = ["DistributedConfig", "DistributedError"]
