"""How fast this machine runs Python of the kind the kit is made of: the time of one fixed
workload (calls, attribute writes, struct unpacks, slices, dict stores, as a frame decoder
does per frame), best of several runs. It does not depend on the kit's code, so it compares
machines: the absolute goals (the fuzz targets' exec/s per core) move with it, and two
``make bench`` runs' figures compare through it (benchmarks/run.py puts it in ``machine``)."""
from __future__ import annotations

import struct
import time

_HEAD = struct.Struct(">HB")
_DATA = bytes(range(256)) * 8


class _Item:
    __slots__ = ("key", "body")


def _workload() -> int:
    seen = {}
    total = 0
    for at in range(0, 2000, 4):
        key, size = _HEAD.unpack_from(_DATA, at)
        item = _Item()
        item.key, item.body = key, _DATA[at:at + size % 32]
        seen[key] = item
        total += len(item.body)
    return total + len(seen)


def calibration_us(repeat: int = 9, number: int = 50) -> float:
    """Microseconds one run of the workload takes here, best of ``repeat`` rounds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            _workload()
        best = min(best, time.perf_counter() - start)
    return round(best / number * 1e6, 1)


if __name__ == "__main__":
    print(calibration_us())
