"""Target profiles: which reading of a protocol a target follows, and what it advertises.

``--profile NAME`` picks a built-in profile from the protocol's registry entry;
``--profile FILE.toml`` loads a file that may ``extends = "<built-in name>"``::

    extends = "document"
    [credentials]
    api_key = "secret"
    [limits]
    max_frame_size = 1048576
    [features]            # optional features the target has (true) or lacks (false)
    wal = false
    [timing]              # behaviour the suite waits for
    retry_backoff = 0.1
    max_retries = 3
    [waivers]             # requirement ID -> reason; a failing waived test is reported, not failed
    "BLIP-PUB-009" = "we echo the tag for QoS0 as well"
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field

_SECTIONS = ("credentials", "limits", "features", "timing", "waivers")


class ProfileError(ValueError):
    pass


@dataclass(frozen=True)
class Profile:
    name: str
    protocol: str
    credentials: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    features: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    waivers: dict = field(default_factory=dict)
    #: The built-in profile this one is or extends: what a reference broker is asked to speak.
    base: str | None = None

    def feature(self, name: str, default: bool = True) -> bool:
        return bool(self.features.get(name, default))


def _merge(base: dict, extra: dict) -> dict:
    out = {k: dict(base.get(k, {})) for k in _SECTIONS}
    for key, value in extra.items():
        if key in ("extends", "name"):
            continue
        if key not in _SECTIONS:
            raise ProfileError(f"unknown profile section [{key}] (known: {', '.join(_SECTIONS)})")
        if not isinstance(value, dict):
            raise ProfileError(f"profile section [{key}] must be a table")
        out[key].update(value)
    return out


def _builtin(spec, name: str, seen: tuple = ()) -> dict:
    if name not in spec.profiles:
        known = ", ".join(sorted(spec.profiles))
        raise ProfileError(f"{spec.id}: unknown profile {name!r} (built-in: {known})")
    if name in seen:
        raise ProfileError(f"profile {name!r} extends itself")
    entry = spec.profiles[name]
    base = _builtin(spec, entry["extends"], seen + (name,)) if "extends" in entry else {}
    return _merge(base, entry)


def load_profile(spec, name_or_path: str | None) -> Profile:
    """Resolve ``--profile`` for protocol ``spec`` (a registry entry)."""
    name = name_or_path or spec.default_profile
    if name.endswith(".toml") or os.path.sep in name or os.path.exists(name):
        try:
            with open(name, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ProfileError(f"profile file {name!r} not found") from None
        except tomllib.TOMLDecodeError as exc:
            raise ProfileError(f"profile file {name!r}: {exc}") from None
        builtin = data.get("extends", spec.default_profile)
        merged = _merge(_builtin(spec, builtin), data)
        label = data.get("name", os.path.basename(name))
    else:
        merged = _builtin(spec, name)
        label = builtin = name
    return Profile(label, spec.id, **merged, base=builtin)
