"""The settings of a run: the configs of its steps (``Step.config``), each a frozen dataclass
next to its step's logic. A run names the configs it changes; every other step runs with its
config's defaults. Where per-file work runs (workers, Ray) is the executor's, not a setting:
it changes speed, never results."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any, TypeVar

Config = TypeVar("Config")


class Settings:
    """The configs a run gives, at most one of each type; once bound to the chain's steps
    (``for_steps``), every configured step's config, named by its step."""

    def __init__(self, *configs: object) -> None:
        kinds = [type(config) for config in configs]
        if len(set(kinds)) != len(kinds):
            raise ValueError("a run gives each step's config at most once.")
        self._configs: dict[type, object] = {type(config): config for config in configs}
        self._steps: dict[str, type] = {}

    def of(self, kind: type[Config]) -> Config:
        """The run's config of type ``kind``, else that config's defaults."""
        found = self._configs.get(kind)
        return found if isinstance(found, kind) else kind()

    def for_steps(self, steps: Iterable[tuple[str, type]]) -> Settings:
        """These settings with the config of every (step name, config type) given."""
        bound = Settings(*self._configs.values())
        bound._steps = dict(steps)
        return bound

    def record(self) -> dict[str, Any]:
        """What ``curation.json`` records: each step's config as it is, by step name, as JSON
        values (an enum by its value, a tuple as a list)."""
        configs = {name: dataclasses.asdict(self.of(kind)) for name, kind in self._steps.items()}
        recorded: dict[str, Any] = json.loads(json.dumps(configs))
        return recorded

    def __repr__(self) -> str:
        return f"Settings({', '.join(map(repr, self._configs.values()))})"
