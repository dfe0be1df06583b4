"""Command-line options that several commands share, each defined once, and the option of a
step setting made from its config (``setting_option``). Only click, typer and the configs
(standard library) are imported here, so that the commands' help stays fast."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import click
import typer

from curation.lookalikes import LookalikeConfig
from curation.source.source import LOCK_NAME

DEFAULT_BUILD = Path("build")
BuildDir = Annotated[Path, typer.Option("--build", help="Build folder.", file_okay=False)]
Workers = Annotated[
    int, typer.Option(help="Local worker processes for per-file work (0 = all cores).", min=0)
]


def setting_range(config: type, name: str) -> dict[str, Any]:
    """The ``min`` and ``max`` a config declares on its field ``name`` (for an option of the
    same quantity outside the chain, such as the audit's threshold)."""
    (field,) = (f for f in fields(config) if f.name == name)
    return {k: field.metadata[k] for k in ("min", "max") if k in field.metadata}


LookalikeThreshold = Annotated[
    int,
    typer.Option(
        "--threshold",
        help="Look-alike distance in bits of 512 (scaled for 64-bit hashes).",
        **setting_range(LookalikeConfig, "lookalike_distance"),
    ),
]

SourceLock = Annotated[
    Path | None,
    typer.Option(
        "--lock",
        help=f"sha256/size lock of the source archive [default: BUILD/{LOCK_NAME}, or "
        f"./{LOCK_NAME} when an earlier version left one there].",
        show_default=False,
    ),
]


def setting_option(config: type, field: dataclasses.Field[Any], kind: Any) -> click.Option:
    """A step setting as an option: its name, type, range, default and help come from its
    config, and a value the config refuses is a usage error (one sentence, exit 2)."""
    flag, help = f"--{field.name.replace('_', '-')}", field.metadata.get("help", "")
    if kind is bool:
        return click.Option([f"{flag}/--no-{flag[2:]}"], default=field.default, help=help)
    is_enum = isinstance(kind, type) and issubclass(kind, enum.Enum)
    if is_enum:
        shape: dict[str, Any] = {"type": click.Choice([member.value for member in kind])}
    elif get_origin(kind) is tuple:
        items = get_args(kind)
        shape = {"type": _ranged(items[0], field), "nargs": len(items)}
    else:
        shape = {"type": _ranged(kind, field)}

    def checked(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        value = kind(value) if is_enum else value
        try:
            config(**{field.name: value})
        except ValueError as error:
            raise click.BadParameter(str(error)) from None
        return value

    default = field.default.value if isinstance(field.default, enum.Enum) else field.default
    return click.Option(
        [flag], default=default, show_default=True, help=help, callback=checked, **shape
    )


def _ranged(kind: type, field: dataclasses.Field[Any]) -> Any:
    """``kind``, within the range the field's metadata declares (``min``, ``max``), if any."""
    bounds = {k: field.metadata[k] for k in ("min", "max") if k in field.metadata}
    if not bounds:
        return kind
    return click.FloatRange(**bounds) if kind is float else click.IntRange(**bounds)
