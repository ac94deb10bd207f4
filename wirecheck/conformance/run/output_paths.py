"""The files a run will write, checked before it starts: a report, JUnit XML or allure folder
that cannot be written is a usage error at once, not a traceback after the whole suite ran
(and the verdicts lost with it)."""
from __future__ import annotations

import os
import tempfile


def unwritable(path: str, folder: bool = False) -> str | None:
    """Why ``path`` (a file, or with ``folder`` a folder) cannot be written, or None. Makes the
    folders on the way, as the writers do."""
    target = os.path.abspath(path)
    where = target if folder else os.path.dirname(target)
    if not folder and os.path.isdir(target):
        return "it is a folder"
    try:
        os.makedirs(where, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = where
        while not os.path.exists(blocker):
            blocker = os.path.dirname(blocker)
        return f"{blocker} is a file, not a folder"
    except OSError as exc:
        return f"cannot make the folder {where}: {exc.strerror or exc}"
    try:
        fd, probe = tempfile.mkstemp(dir=where, prefix=".wirecheck-write-check-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in {where}: {exc.strerror or exc}"
    return None


def check_outputs(config) -> None:
    """pytest.UsageError for the first output of this run that cannot be written."""
    import pytest
    outputs = (("--report (--wirecheck-report)", config.getoption("wirecheck_report"), False),
               ("--junitxml", getattr(config.option, "xmlpath", None), False),
               ("--alluredir", getattr(config.option, "allure_report_dir", None), True))
    for option, path, folder in outputs:
        if path:
            why = unwritable(path, folder)
            if why is not None:
                raise pytest.UsageError(f"{option} {path}: {why}")


#: The options of each command that name what it writes: (option, attribute, a folder? or a
#: function of the path that says).
#: ``check`` passes its --report and --junitxml to pytest, whose plugin checks them
#: (check_outputs); the rest are checked here before the command starts.
COMMAND_OUTPUTS = {
    "fuzz": (("--out", "out", False), ("--findings", "findings", True)),
    "analyze": (("--out", "out", True),), "analyze_fuzz": (("--out", "out", True),),
    "report": (("--out", "out", lambda path: not path.endswith((".html", ".json"))),),
    "replay": (("--report", "report", False),), "check_client": (("--report", "report", False),),
    "serve": (("--report", "report", False), ("--capture", "capture", False)),
    "record": (("--capture", "capture", False),),
}


def command_output_problem(command: str, args) -> str | None:
    """``"--option PATH: why"`` for the first output of ``command`` that cannot be written."""
    for option, attribute, folder in COMMAND_OUTPUTS.get(command, ()):
        path = getattr(args, attribute, None)
        if path:
            why = unwritable(str(path), folder(str(path)) if callable(folder) else folder)
            if why is not None:
                return f"{option} {path}: {why}"
    return None
