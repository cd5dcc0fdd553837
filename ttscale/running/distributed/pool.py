"""The driver's side of the Ray pool: start workers, hand out problems, survive workers that die.

Scheduling is pull-based: a problem goes to the live worker with the most free slots (each worker
takes `spec.concurrency` problems at once, which its engine batches), so fast and slow workers
both stay busy and a restarted worker simply rejoins. When a worker dies, every problem it had
in flight fails here with a Ray error; each goes back through `solve`, to another live worker,
while Ray restarts the dead one and `_revive` waits for its engine before giving it work again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ttscale.engine.base import is_fatal
from ttscale.running.distributed import DistributedConfig, DistributedError

if TYPE_CHECKING:
    from ttscale.running.runner import Prepared
    from ttscale.schema import Problem

_OBJECT_STORE = 512 * 1024 * 1024  # problems and records are small; Ray's default takes 30% of RAM
_STOP_TIMEOUT = 30.0  # seconds a worker gets to close its engine before it is killed


@dataclass
class _Member:
    handle: Any
    rank: int
    capacity: int
    state: str = "starting"
    """starting → up → reviving (after a death) → up …, or dead for good."""
    busy: int = 0
    incarnation: int = 0
    """Bumped at each death, so the many problems that see one death handle it once."""
    deaths: int = 0
    solved: int = 0
    pid: int | None = None
    cause: str = ""
    revival: asyncio.Task[None] | None = field(default=None, repr=False)


class RayWorkerPool:
    """Ray workers that each own an engine. Use `async with RayWorkerPool(...) as pool: await pool.solve(p)`."""

    def __init__(self, *, prepared: Prepared, config: DistributedConfig) -> None:
        if prepared.spec.backend != "vllm":
            raise DistributedError("Ray workers run vLLM engines; an OpenAI-compatible server scales by itself")
        self.prepared = prepared
        self.config = config
        self.engines: list[dict[str, Any]] = []
        """Each worker's engine description, as its first start reported it."""
        self.resent = 0
        """Problems sent again because the worker solving them died."""
        self._members: list[_Member] = []
        self._changed: asyncio.Condition | None = None
        self._owns_ray = False
        self._prepared_ref: Any = None

    @property
    def capacity(self) -> int:
        """Problems in flight over the whole pool."""
        return sum(m.capacity for m in self._members)

    def worker_pids(self) -> list[int | None]:
        """Process ids of the workers as last started (None for a dead one)."""
        return [m.pid if m.state != "dead" else None for m in self._members]

    async def current_pid(self, rank: int, *, timeout: float = 120.0) -> int:
        """Ask worker `rank` for its process id now (a restarted worker answers before its engine is up). While Ray
        is still restarting it the actor is "temporarily unavailable": asked again until `timeout`."""
        unavailable = _ray().exceptions.ActorUnavailableError

        async def ask() -> int:
            while True:
                try:
                    return int(await self._members[rank].handle.pid.remote())
                except unavailable:
                    await asyncio.sleep(0.5)

        return await asyncio.wait_for(ask(), timeout)

    def stats(self) -> list[dict[str, Any]]:
        stats = []
        for m in self._members:
            stats.append({"rank": m.rank, "state": m.state, "busy": m.busy, "solved": m.solved, "deaths": m.deaths})
            if m.cause:
                stats[-1]["cause"] = m.cause
        return stats

    async def __aenter__(self) -> RayWorkerPool:
        try:
            await self.start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- start and stop -------------------------------------------------------------------------
    async def start(self) -> None:
        ray = _ray()
        self._changed = asyncio.Condition()
        await asyncio.to_thread(self._connect, ray)  # ray.init blocks for seconds
        workers, cpus, gpus = self._plan(ray)
        from ttscale.running.distributed.worker import Worker

        actor = ray.remote(Worker).options(
            num_cpus=cpus,
            num_gpus=gpus,
            max_restarts=self.config.max_restarts,
            max_task_retries=0,  # the pool re-sends a dead worker's problems itself, to any live worker
            max_concurrency=self.prepared.spec.concurrency + 8,  # + start/stop/pid calls
        )
        self._prepared_ref = ray.put(self.prepared)  # one copy in the object store, read by every worker
        for rank in range(workers):
            handle = actor.remote(self._prepared_ref, rank)
            self._members.append(_Member(handle=handle, rank=rank, capacity=self.prepared.spec.concurrency))
        infos = await asyncio.gather(*(self._start_member(m) for m in self._members), return_exceptions=True)
        failures = [
            f"worker {m.rank}: {info}"
            for m, info in zip(self._members, infos, strict=True)
            if isinstance(info, BaseException)
        ]
        if failures:
            raise DistributedError("; ".join(failures))
        self.engines = [info["engine"] for info in infos if isinstance(info, dict)]

    async def _start_member(self, member: _Member) -> dict[str, Any]:
        try:
            info: dict[str, Any] = await asyncio.wait_for(member.handle.start.remote(), self.config.start_timeout)
        except asyncio.TimeoutError:
            raise DistributedError(f"its engine did not start within {self.config.start_timeout:g} s") from None
        except Exception as exc:
            raise DistributedError(f"its engine did not start: {_describe(exc)}") from None
        member.pid, member.state = info["pid"], "up"
        return info

    async def close(self) -> None:
        ray = _ray()
        for member in self._members:
            if member.revival is not None:
                member.revival.cancel()
        await asyncio.gather(*(self._stop_member(ray, m) for m in self._members), return_exceptions=True)
        self._members = []
        if self._owns_ray and ray.is_initialized():
            await asyncio.to_thread(ray.shutdown)
            self._owns_ray = False

    async def _stop_member(self, ray: Any, member: _Member) -> None:
        if member.state == "up":
            with contextlib.suppress(Exception):  # a worker that cannot stop cleanly is killed all the same
                await asyncio.wait_for(member.handle.stop.remote(), _STOP_TIMEOUT)
        ray.kill(member.handle, no_restart=True)

    def _connect(self, ray: Any) -> None:
        if ray.is_initialized():  # a notebook or a test already connected: use that cluster, leave it running
            return
        quiet = {"log_to_driver": bool(os.environ.get("TTSCALE_DEBUG")), "logging_level": logging.ERROR}
        try:
            if self.config.address:
                _check_reachable(self.config.address)
                ray.init(address=self.config.address, namespace="ttscale", **quiet)
            else:
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a local run sends nothing anywhere
                workers = self.config.workers or 1
                needed = math.ceil(workers * self.config.cpus_per_worker)
                ray.init(
                    num_cpus=max(os.cpu_count() or 1, needed),  # vLLM threads share cores anyway: never wait for CPUs
                    include_dashboard=False,
                    object_store_memory=_OBJECT_STORE,
                    _node_ip_address="127.0.0.1",  # the local cluster listens on loopback only
                    namespace="ttscale",
                    **quiet,
                )
        except DistributedError:
            raise
        except Exception as exc:
            where = f"the Ray cluster at {self.config.address}" if self.config.address else "a local Ray instance"
            raise DistributedError(f"cannot start or reach {where}: {_describe(exc)}") from None
        self._owns_ray = True

    def _plan(self, ray: Any) -> tuple[int, float, float]:
        """Workers and the CPUs/GPUs of each; refuse what the cluster cannot hold (Ray would wait forever)."""
        resources = ray.cluster_resources()
        have_cpus, have_gpus = float(resources.get("CPU", 0)), float(resources.get("GPU", 0))
        cpus = self.config.cpus_per_worker
        gpus = self.config.gpus_per_worker
        if gpus is None:
            gpus = float(self.prepared.spec.engine.tensor_parallel_size) if have_gpus else 0.0
        workers = self.config.workers or (max(1, int(have_gpus // gpus)) if gpus else 1)
        if workers * cpus > have_cpus + 1e-9 or workers * gpus > have_gpus + 1e-9:
            raise DistributedError(
                f"{workers} workers × ({cpus:g} CPU, {gpus:g} GPU) need {workers * cpus:g} CPUs and "
                f"{workers * gpus:g} GPUs; the Ray cluster has {have_cpus:g} and {have_gpus:g}"
            )
        return workers, cpus, gpus

    # -- solving --------------------------------------------------------------------------------
    async def solve(self, problem: Problem) -> dict[str, Any]:
        """Solve `problem` on some live worker; if that worker dies, on another (a `runner.Solver`)."""
        attempts = 0
        died_under: set[int] = set()
        while True:
            member = await self._acquire(avoid=died_under)
            incarnation = member.incarnation
            try:
                record: dict[str, Any] = await member.handle.solve.remote(problem)
                member.solved += 1
                return record
            except Exception as exc:
                cause = _worker_failure(exc)
                if cause is None:  # the problem's own code failed, not the worker: the run should see it
                    raise _original(exc) from None
                attempts += 1
                died_under.add(member.rank)
                self._lost(member, incarnation, cause, kill=not _is_ray_death(exc))
                if attempts >= self.config.max_attempts:
                    return self._gave_up(problem, attempts, cause)
                self.resent += 1
            finally:
                await self._release(member)

    async def _acquire(self, *, avoid: set[int]) -> _Member:
        """A slot on a live worker; not on one in `avoid` (died under this problem) while another lives."""
        assert self._changed is not None, "RayWorkerPool.start() first"
        async with self._changed:
            while True:
                free = [m for m in self._members if m.state == "up" and m.busy < m.capacity]
                if any(m.state != "dead" and m.rank not in avoid for m in self._members):
                    free = [m for m in free if m.rank not in avoid]
                if free:
                    member = min(free, key=lambda m: (m.busy, m.rank))
                    member.busy += 1
                    return member
                if all(m.state == "dead" for m in self._members):
                    causes = "; ".join(f"worker {m.rank}: {m.cause}" for m in self._members)
                    raise DistributedError(
                        f"all {len(self._members)} workers are dead ({causes}); finished problems are saved, "
                        "continue with --resume"
                    )
                await self._changed.wait()

    async def _release(self, member: _Member) -> None:
        assert self._changed is not None
        async with self._changed:
            member.busy -= 1
            self._changed.notify_all()

    def _lost(self, member: _Member, incarnation: int, cause: str, *, kill: bool) -> None:
        """A worker failed under a problem: take it out of rotation and bring it back (once per death)."""
        if member.incarnation != incarnation or member.state != "up":
            return
        member.incarnation += 1
        member.deaths += 1
        member.cause = cause
        member.state = "reviving"
        if kill:  # alive but its engine is gone: a restart gives it a new one
            _ray().kill(member.handle, no_restart=False)
        member.revival = asyncio.ensure_future(self._revive(member))

    async def _revive(self, member: _Member) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.start_timeout
        state = "dead"
        while member.deaths <= self.config.max_restarts and loop.time() < deadline:
            try:
                info = await asyncio.wait_for(member.handle.start.remote(), deadline - loop.time())
            except asyncio.TimeoutError:
                member.cause = f"not back within {self.config.start_timeout:g} s after: {member.cause}"
                break
            except Exception as exc:
                if not _is_ray_death(exc):  # it restarted but its engine cannot start: no use retrying
                    member.cause = f"engine failed to restart: {_describe(exc)}"
                    break
                # Calls made before Ray noticed the death fail too; the restart is on its way.
                await asyncio.sleep(1.0)
                continue
            member.pid, state = info["pid"], "up"
            break
        assert self._changed is not None
        async with self._changed:
            member.state = state
            if state == "dead":
                member.pid = None
            self._changed.notify_all()

    def _gave_up(self, problem: Problem, attempts: int, cause: str) -> dict[str, Any]:
        """A problem that took `attempts` workers down with it: recorded as failed, not sent again."""
        from ttscale.schema import RunRecord

        return RunRecord(
            id=problem.id,
            strategy=self.prepared.strategy_name,
            prediction=None,
            reference=problem.reference,
            correct=False,
            ledger=self.prepared.ledger().to_dict(),
            samples=[],
            level=problem.level,
            error=f"WorkerDied: {attempts} workers died while solving this problem; last: {cause}",
        ).to_json()


def _check_reachable(address: str, *, timeout: float = 5.0) -> None:
    """Fail fast on a cluster address where nothing listens: ray.init would retry for minutes."""
    if address == "auto":
        return
    hostport = address.removeprefix("ray://").rsplit("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise DistributedError(f"ray address must look like host:port or ray://host:port, got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DistributedError(f"cannot reach the Ray cluster at {address}: {reason}") from None


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise DistributedError("Ray workers need Ray: pip install 'ttscale[ray]' (or pip install ray)") from None
    return ray


def _worker_failure(exc: BaseException) -> str | None:
    """Why the worker is lost (it died, or its engine did), or None when the problem itself failed."""
    ray = _ray()
    if isinstance(exc, ray.exceptions.RayTaskError):
        cause = getattr(exc, "cause", None)
        return _describe(cause) if cause is not None and is_fatal(cause) else None
    if isinstance(exc, ray.exceptions.RayError):
        return _describe(exc)
    return None


def _is_ray_death(exc: BaseException) -> bool:
    ray = _ray()
    return isinstance(exc, ray.exceptions.RayError) and not isinstance(exc, ray.exceptions.RayTaskError)


def _original(exc: BaseException) -> BaseException:
    """The exception a worker raised, as itself rather than wrapped in Ray's RayTaskError."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc


def _describe(exc: BaseException) -> str:
    exc = _original(exc)
    text = " ".join(str(exc).split())
    first = text.split(" Traceback")[0]  # Ray appends remote tracebacks; one line is what a user needs
    return f"{type(exc).__name__}: {first[:300]}"
