"""What an engine backend is: one class in one file, registered in `ttscale.engine.ENGINES` by one line.

    ENGINES.register("toy", "my_package.toy:ToyBackend")

`ttscale run --backend` and `ttscale sweep --backend` offer the registered names, a sweep's cells carry the name, and
`start_engine` starts whichever backend's `config` class a config is an instance of. Its options are the fields of
its own config class (a dataclass: stored in config.json as the run spec's `server`, read back by `from_stored`); an
instance is passed as `server=` to `ttscale.run` and `ttscale.sweep`, or made from the flags (`from_flags`): unless
the backend declares flags of its own (`own_flags`), `ttscale run` and `ttscale sweep` offer one flag per field,
`--NAME-FIELD` (`--toy-seed 3`), its docstring as help (`ttscale.running.flags.add_backend_flags`). Whether
a failure is a passing fault of the backend (the problem is recorded `unfinished`, and `--resume` runs it again) is
the backend's own call (`is_transient`), so the runner names no backend.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ttscale.engine.base import AsyncEngine


class Backend:
    """An engine backend. Subclass it, set `config`, define `start`; the rest has defaults."""

    config: ClassVar[type | None] = None
    """Its options' class (a dataclass whose fields have defaults or come from `from_flags`). None: the in-process
    vLLM engine, whose options are the run's `EngineConfig` (`RunSpec.engine`, the engine flags)."""

    own_flags: ClassVar[bool] = False
    """True: it declares its flags itself (the openai backend's --base-url, ...) and reads them in `from_flags`.
    False: the command line offers one flag per field of `config`, generated, which the default `from_flags` reads."""

    @classmethod
    async def start(cls, config: Any) -> AsyncEngine:
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
        """Its config from the command line: `stored` (a resumed run's) or the config's defaults, with the options
        given as its generated flags on top (`args.backend_options`: field -> value, gathered by
        `ttscale.running.flags.backend_options`); a value its config refuses is a one-line `ttscale.errors.UsageError`.
        A backend with flags of its own (`own_flags`) reads them here instead."""
        from ttscale.errors import UsageError

        if cls.config is None:
            return None
        given = dict(getattr(args, "backend_options", None) or {})
        if not given:
            return stored if stored is not None else cls.config()
        values = {f.name: getattr(stored, f.name) for f in dataclasses.fields(stored)} if stored is not None else {}
        try:
            return cls.config(**{**values, **given})
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{command}: {exc}") from None


__all__ = ["Backend"]
