"""The Jinja2 environment the reports render with: their templates in ``templates/``, HTML escaped by default."""
from __future__ import annotations

from typing import Any, Callable

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

__all__ = ["templates"]


def templates(filters: dict[str, Callable] | None = None, tests: dict[str, Callable] | None = None,
              globals: dict[str, Any] | None = None) -> Environment:
    """An environment over ``svibench/report/templates`` (autoescape for ``.html.j2``, not for ``.md.j2``; an
    undefined name is an error, not an empty string)."""
    env = Environment(loader=PackageLoader("svibench.report", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
                      keep_trailing_newline=True)
    env.filters.update(filters or {})
    env.tests.update(tests or {})
    env.globals.update(globals or {})
    return env
