"""Target profiles: which reading of a protocol a target follows, and what it advertises.

``--profile NAME`` picks a built-in profile from the protocol's registry entry;
``--profile FILE.toml`` loads a file that may ``extends = "<built-in name>"``::

    extends = "document"
    [credentials]
    api_key = "secret"
    [limits]
    max_frame_size = 1048576
    [features]            # optional features the target has (true) or lacks (false)
    durable = false
    [timing]              # behaviour the suite waits for
    retry_backoff = 0.1
    max_retries = 3
    [waivers]             # requirement ID -> reason; a failing waived test is reported, not failed
    "BLIP-PUB-009" = "we echo the tag for QoS0 as well"
    [target]              # how the kit runs the target (as --target-command, which overrides it)
    command = "./my-server --port {port} --data {data_dir}"
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field

_SECTIONS = ("credentials", "limits", "features", "timing", "waivers", "target")


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
    #: how the kit runs the target: ``command`` (as ``--target-command``)
    target: dict = field(default_factory=dict)
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


#: Settings the suites read that no built-in profile sets (the built-in profiles' own settings
#: are known by being there): a profile file may set these too, and nothing else.
READ_BY_THE_SUITES = {
    "blipmq": {"timing": {"retry_backoff", "max_retries"}},
    "vibemq": {"credentials": {"username"}},
}


def known_settings(spec) -> dict[str, set[str]]:
    """Per section, the setting names a profile of ``spec`` may hold."""
    known: dict[str, set[str]] = {s: set() for s in _SECTIONS if s != "waivers"}
    for entry in spec.profiles.values():
        for section, values in entry.items():
            if section in known and isinstance(values, dict):
                known[section].update(values)
    for section, names in READ_BY_THE_SUITES.get(spec.id, {}).items():
        known[section].update(names)
    known["target"].update(("command",))
    known["timing"].update(_broker_settings(spec))      # `serve --profile` gives [timing] to the broker
    return known


def _broker_settings(spec) -> set[str]:
    """The settings the protocol's reference broker takes by name: its ``make_broker`` checks
    names before it builds anything (reference_impl/core/options.py), and says which it knows."""
    from wirecheck.reference_impl.core.options import UnknownOption
    try:
        spec.make_broker("127.0.0.1", 0, wirecheck_no_such_setting=None)
    except UnknownOption as exc:
        return set(exc.known)
    except Exception:                      # a broker that cannot tell: only the lists above
        return set()
    return set()


def _check_settings(spec, data: dict, where: str) -> None:
    """A setting the kit does not read, or a waiver of a requirement ID the catalogue lacks, is
    an error: silently ignored, a misspelt name would change nothing and look applied."""
    import difflib
    known = known_settings(spec)
    for section, names in known.items():
        for name in data.get(section, {}) if isinstance(data.get(section), dict) else ():
            if name not in names:
                near = difflib.get_close_matches(name, sorted(names), n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                listed = ", ".join(sorted(names)) or "none"
                raise ProfileError(f"{where}: [{section}] {name!r} is not a setting the kit reads for "
                                   f"{spec.id} (it reads: {listed}){hint}")
    waivers = data.get("waivers", {})
    if isinstance(waivers, dict) and waivers:
        from wirecheck.conformance.requirements import catalogue
        ids = set(catalogue(spec.requirements))
        for rid in waivers:
            if rid not in ids:
                near = difflib.get_close_matches(rid, sorted(ids), n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise ProfileError(f"{where}: [waivers] {rid!r} is not a requirement ID of {spec.id}{hint}")


def load_profile(spec, name_or_path: str | None) -> Profile:
    """Resolve ``--profile`` for protocol ``spec`` (a registry entry)."""
    name = name_or_path or spec.default_profile
    if name.endswith(".toml") or os.path.sep in name or os.path.exists(name):
        try:
            with open(name, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ProfileError(f"profile file {name!r} not found") from None
        except OSError as exc:                       # a directory, no permission
            raise ProfileError(f"profile file {name!r}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:            # TOML is UTF-8 text
            raise ProfileError(f"profile file {name!r}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ProfileError(f"profile file {name!r}: {exc}") from None
        builtin = data.get("extends", spec.default_profile)
        if not isinstance(builtin, str):
            raise ProfileError(f"profile file {name!r}: extends must name a built-in profile "
                               f"({', '.join(sorted(spec.profiles))}), not {builtin!r}")
        try:
            merged = _merge(_builtin(spec, builtin), data)
            _check_settings(spec, data, f"profile file {name!r}")
        except ProfileError as exc:                  # said with the file it came from
            if f"profile file {name!r}" in str(exc):
                raise
            raise ProfileError(f"profile file {name!r}: {exc}") from None
        label = data.get("name", os.path.basename(name))
    else:
        merged = _builtin(spec, name)
        label = builtin = name
    return Profile(label, spec.id, **merged, base=builtin)
