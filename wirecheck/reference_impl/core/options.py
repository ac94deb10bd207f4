"""The settings a reference broker takes by name (``wirecheck serve --option KEY=VALUE``, a
profile's ``[timing]`` values, the embedded target's options): each broker's ``make_broker``
checks the names against what its configuration has before building it, so a misspelt
setting is refused by name rather than failing somewhere inside a constructor."""
from __future__ import annotations

import difflib
from dataclasses import fields, is_dataclass


class UnknownOption(ValueError):
    """Settings the broker has no field for. ``names``: them, sorted; ``known``: the names it
    has."""

    def __init__(self, protocol: str, names, known=()) -> None:
        self.protocol = protocol
        self.names = tuple(sorted(names))
        self.known = tuple(sorted(known))
        super().__init__(f"{protocol} broker: unknown option(s) {', '.join(self.names)}")

    def near(self, name: str) -> str | None:
        """The known setting ``name`` was most likely meant to be (a typo), if any."""
        close = difflib.get_close_matches(name, self.known, n=1, cutoff=0.8)
        return close[0] if close else None


def check_options(protocol: str, options, *accepted) -> None:
    """Raise :class:`UnknownOption` for the names of ``options`` none of ``accepted`` has;
    each of ``accepted`` is a dataclass (its fields) or an iterable of names."""
    known: set[str] = set()
    for source in accepted:
        known.update(f.name for f in fields(source)) if is_dataclass(source) else known.update(source)
    unknown = set(options) - known
    if unknown:
        raise UnknownOption(protocol, unknown, known)
