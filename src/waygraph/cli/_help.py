"""How ``waygraph X --help`` names things: ``GOAL`` and ``[MESSAGE]``, flags without a type.

typer writes a required argument as ``{goal}`` in usage lines and puts
``<bool>`` beside every on/off flag, which reads like something to type.
:class:`WaygraphGroup` (the ``cls`` of the root app) walks the whole command
tree once it is built, sub-apps and commands other modules register
included, and names arguments in capitals (``[NAME]`` when optional,
``NAME...`` when repeatable) and flags with no value shown.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

__all__ = ["WaygraphGroup"]


# No __slots__ of their own: an instance's class can then be swapped for these.
class _Argument(TyperArgument):
    __slots__ = ()

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if self.nargs != 1:
            name += "..."
        return name if self.required else f"[{name}]"


class _Command(TyperCommand):
    __slots__ = ()

    def get_params(self, ctx: Any) -> list[Any]:
        # --help is created lazily: tidy what help is about to show.
        params: list[Any] = super().get_params(ctx)
        for param in params:
            _tidy_param(param)
        return params


class WaygraphGroup(TyperGroup):
    """The root group: tidies every command's help once typer has built the tree.

    Example:
        >>> import typer
        >>> app = typer.Typer(cls=WaygraphGroup)
        >>> @app.command()
        ... def greet(name: str, loud: bool = False) -> None:
        ...     pass
        >>> @app.command()
        ... def other() -> None:
        ...     pass
        >>> group = typer.main.get_command(app)
        >>> greet = group.commands["greet"]
        >>> [p.metavar for p in greet.params]
        ['NAME', '']
    """

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _tidy(self)

    def get_params(self, ctx: Any) -> list[Any]:
        # --help, --install-completion and --show-completion are added later.
        params: list[Any] = super().get_params(ctx)
        for param in params:
            _tidy_param(param)
        return params


def _tidy(command: Any) -> None:
    for param in command.params:
        _tidy_param(param)
    if isinstance(command, TyperGroup):
        if type(command) is TyperGroup:
            command.__class__ = WaygraphGroup
        for sub in command.commands.values():
            _tidy(sub)
    elif type(command) is TyperCommand:
        command.__class__ = _Command


def _tidy_param(param: Any) -> None:
    if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
        # An on/off switch takes no value: show none (typer would show <bool>).
        param.metavar = ""
    elif type(param) is TyperArgument:
        param.__class__ = _Argument
        if param.metavar is None and param.name:
            param.metavar = param.name.upper()
