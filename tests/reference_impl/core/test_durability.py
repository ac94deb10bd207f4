"""The append step shared by the WAL and the stream segments: sync per policy, undo on failure."""
import os

import pytest

from wirecheck.reference_impl.core.durability import FsyncPolicy, SyncedAppender


def _open(tmp_path):
    return os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)


def test_every_n_syncs_every_nth_append(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "fsync", calls.append)
    fd = _open(tmp_path)
    try:
        app = SyncedAppender(FsyncPolicy.parse("every_n:2"), clock=lambda: 0.0)
        for i in range(5):
            app.append(fd, b"ab", 2 * i)
        assert len(calls) == 2 and app.unsynced == 1
        assert os.pread(fd, 100, 0) == b"ab" * 5
    finally:
        os.close(fd)


def test_failed_fsync_truncates_the_record_away(tmp_path, monkeypatch):
    fd = _open(tmp_path)
    try:
        app = SyncedAppender(FsyncPolicy.parse("always"), clock=lambda: 0.0)
        app.append(fd, b"good", 0)

        def broken(_fd):
            raise OSError(5, "EIO")
        monkeypatch.setattr(os, "fsync", broken)
        with pytest.raises(OSError):
            app.append(fd, b"doubtful", 4)
        assert os.fstat(fd).st_size == 4 and os.pread(fd, 100, 0) == b"good"
    finally:
        os.close(fd)
