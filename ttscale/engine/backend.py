"""What an engine backend is: one class in one file, registered in `ttscale.engine.ENGINES` by one line.

    ENGINES.register("toy", "my_package.toy:ToyBackend")

`ttscale run --backend` and `ttscale sweep --backend` offer the registered names, a sweep's cells carry the name, and
`start_engine` starts whichever backend's `config` class a config is an instance of. Its options are the fields of
its own config class (a dataclass: stored in config.json as the run spec's `server`, read back by `from_stored`); an
instance is passed as `server=` to `ttscale.run` and `ttscale.sweep`, or made from the flags (`from_flags`). Whether
a failure is a passing fault of the backend (the problem is recorded `unfinished`, and `--resume` runs it again) is
the backend's own call (`is_transient`), so the runner names no backend.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ttscale.engine.base import EngineClient


class Backend:
    """An engine backend. Subclass it, set `config`, define `start`; the rest has defaults."""

    config: ClassVar[type | None] = None
    """Its options' class (a dataclass whose fields have defaults or come from `from_flags`). None: the in-process
    vLLM engine, whose options are the run's `EngineConfig` (`RunSpec.engine`, the engine flags)."""

    @classmethod
    async def start(cls, config: Any) -> EngineClient:
        """Start the engine `config` (an instance of `config`, or an EngineConfig for the in-process engine)
        describes, inside the running event loop."""
        raise NotImplementedError(f"{cls.__name__} does not define start()")

    @classmethod
    def is_transient(cls, exc: BaseException) -> bool:
        """Whether `exc` is a passing fault of this backend that outlived its retries (a server's 5xx, a malformed
        answer): the problem is recorded `unfinished`, not wrong, and `--resume` runs it again. None by default."""
        return False

    @classmethod
    def from_flags(cls, args: argparse.Namespace, stored: Any, command: str) -> Any:
        """Its config from the command line: `stored` (a resumed run's) as it is, else the config's defaults.
        A backend with flags of its own reads them here (one-line `ttscale.errors.UsageError`s)."""
        if cls.config is None:
            return None
        return stored if stored is not None else cls.config()


__all__ = ["Backend"]
