"""A stream's Create arguments, validated as the real server validates them (max-length-bytes,
max-age, the segment size, initial-cluster-size, queue-leader-locator; unknown keys kept)."""
from __future__ import annotations

import re

_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DURATION = re.compile(r"([0-9]+)([YMDhms])", re.ASCII)
_DAY_MS = 86_400_000
_UNIT_MS = {"Y": 365 * _DAY_MS, "M": 30 * _DAY_MS, "D": _DAY_MS,
            "h": 3_600_000, "m": 60_000, "s": 1000}

#: The real server's name for the segment size is "stream-max-segment-size-bytes"; the shorter
#: form is accepted too.
SEGMENT_SIZE_KEYS = ("stream-max-segment-size-bytes", "max-segment-size-bytes")


def _parse_int(key: str, value: str, minimum: int) -> int:
    # The real server converts with binary_to_integer (optional sign, ASCII digits, nothing
    # else); Python's int() would also take spaces and underscores.
    if not _INT.fullmatch(value):
        raise ValueError(f"{key}: {value!r} is not an integer")
    number = int(value)
    if number < minimum:
        raise ValueError(f"{key}: {number} is below {minimum}")
    return number


def parse_duration(value: str) -> int:
    """``max-age`` in milliseconds: a positive integer and one unit of Y M D h m s (a month
    is 30 days, a year 365), as the real server's x-max-age check accepts."""
    match = _DURATION.fullmatch(value)
    if not match or int(match.group(1)) <= 0:
        raise ValueError(f"max-age: {value!r} is not a duration such as 7D, 12h, 30m or 90s "
                         "(a positive integer and one of the units Y M D h m s)")
    return int(match.group(1)) * _UNIT_MS[match.group(2)]


def parse_arguments(args: dict[str, str]) -> dict:
    """Validated Create arguments.

    Returns ``max_length_bytes`` (int or None), ``max_age_ms`` (int or None),
    ``max_segment_size_bytes`` (int or None: the store's default), ``initial_cluster_size``
    (int or None), ``queue_leader_locator`` (str or None) and ``other`` (unknown keys, kept as
    given: the real server ignores them). Raises ValueError naming the bad argument.
    """
    out: dict = {"max_length_bytes": None, "max_age_ms": None, "max_segment_size_bytes": None,
                 "initial_cluster_size": None, "queue_leader_locator": None, "other": {}}
    for key, value in args.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"argument {key!r}: keys and values are strings")
        if key == "max-length-bytes":
            out["max_length_bytes"] = _parse_int(key, value, 0)
        elif key == "max-age":
            out["max_age_ms"] = parse_duration(value)
        elif key in SEGMENT_SIZE_KEYS:
            out["max_segment_size_bytes"] = _parse_int(key, value, 1)
        elif key == "initial-cluster-size":
            out["initial_cluster_size"] = _parse_int(key, value, 1)
        elif key == "queue-leader-locator":
            out["queue_leader_locator"] = value
        else:
            out["other"][key] = value
    return out
