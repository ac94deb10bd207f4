"""What the pipeline reads: capture files from paths, directories and globs; the protocols
to look for and their ports; requirement levels for violation rows."""
from __future__ import annotations

import glob
import os
from typing import Iterable, Optional

from wirecheck.conformance.captures.pcapfile import is_capture

#: File names taken from a directory: pcap and pcapng, gzip-compressed or not. Other files
#: (manifests, notes) are skipped; a file named on the command line is read whatever its name.
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz")


class InputError(ValueError):
    """A path names nothing, or a named file is not a capture."""


def capture_files(paths: Iterable[str], not_captures: list | None = None) -> list[str]:
    """Every capture file under ``paths`` (files, directories walked recursively, globs),
    sorted and without repeats. A file named directly must be a capture (else InputError, or
    with ``not_captures`` a ``{"file", "error", "whole": True}`` appended there and the others
    go on); directories contribute the files whose names end in :data:`CAPTURE_SUFFIXES`."""
    found: list[str] = []
    for path in paths:
        matches = sorted(glob.glob(path, recursive=True)) if glob.has_magic(path) else [path]
        if not matches or not all(os.path.exists(m) for m in matches):
            raise InputError(f"{path}: no such file or directory")
        for match in matches:
            if os.path.isdir(match):
                for root, dirs, files in os.walk(match):
                    dirs.sort()
                    found += [os.path.join(root, f) for f in sorted(files)
                              if f.lower().endswith(CAPTURE_SUFFIXES)]
            elif is_capture(match):
                found.append(match)
            elif not glob.has_magic(path):
                if not_captures is None:
                    raise InputError(f"{match}: not a pcap or pcapng capture")
                not_captures.append({"file": match, "error": "not a pcap or pcapng capture", "whole": True})
    out, seen = [], set()
    for f in found:
        key = os.path.realpath(f)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def protocols(protocol: Optional[str] = None) -> list:
    """The registry specs to analyze: one, or all."""
    from wirecheck.reference_impl.core import registry
    return [registry.get(protocol)] if protocol else registry.all_protocols()
