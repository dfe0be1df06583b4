"""The settings of a run: the configs of its steps (``Step.config``), each a frozen dataclass
next to its step's logic. A run names the configs it changes; every other step runs with its
config's defaults. Where per-file work runs (workers, Ray) is the executor's, not a setting:
it changes speed, never results."""

from __future__ import annotations

from typing import TypeVar

Config = TypeVar("Config")


class Settings:
    """The configs a run gives, at most one of each type."""

    def __init__(self, *configs: object) -> None:
        kinds = [type(config) for config in configs]
        if len(set(kinds)) != len(kinds):
            raise ValueError("a run gives each step's config at most once.")
        self._configs = {type(config): config for config in configs}

    def of(self, kind: type[Config]) -> Config:
        """The run's config of type ``kind``, else that config's defaults."""
        found = self._configs.get(kind)
        return found if isinstance(found, kind) else kind()

    def __repr__(self) -> str:
        return f"Settings({', '.join(map(repr, self._configs.values()))})"
