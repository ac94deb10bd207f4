"""Fixtures shared by the project's own tests."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """One embedded Spark (local[2]) for the whole test session (each xdist worker starts its
    own): starting a JVM takes seconds, so the pipeline's tests share it."""
    from wirecheck.pipeline.spark_job import session
    s = session("local[2]", app="wirecheck-tests", conf={"spark.sql.shuffle.partitions": "4",
                                                        "spark.default.parallelism": "2"})
    yield s
    s.stop()



#: The modules that take longest (`make test PYTEST_ARGS=--durations=60` says which), longest
#: first. They run first: `make test` schedules with xdist's ``worksteal`` (an idle worker takes
#: the not-yet-started half of another's queue, from its end), so they are spread over the
#: workers early instead of the last of them running alone while the other worker sits idle.
#: (xdist's ``load`` hands each worker a quarter of the suite as one contiguous chunk at the
#: start: every module named here went to the first worker, ~13 minutes of one worker idle.)
RUN_FIRST = (
    "test_transport_invariance", "test_benchmarks_smoke", "test_spark_cluster", "test_bench_pipeline", "test_pipeline",
    "test_captures_corpus", "test_installed_wheel", "test_rmqs_suite_real", "test_hardening_targets",
    "test_suite_verdicts", "test_crash_recovery", "test_crashwatch", "test_fuzz_live",
    "test_report_fuzz", "test_reports", "test_pipeline_fuzz", "test_cli", "test_rmqs_cli", "test_command_signals",
    "test_rmqs_rich_capture", "test_mm2_suite_profiles", "test_signalr_suite", "test_target_health",
)


def pytest_collection_modifyitems(config, items):
    """:data:`RUN_FIRST`'s modules first, in its order; each module's tests keep their order (its
    module fixtures are set up once), and so do the other modules."""
    rank = {f"{name}.py": i for i, name in enumerate(RUN_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0].rpartition("/")[2], len(rank)))



def pytest_runtest_protocol(item, nextitem):
    """With WIRECHECK_TEST_TIMELINE=DIR, each xdist worker appends when each test started to
    DIR/<worker>.jsonl (a test ends where its worker's next one starts): which worker sat
    idle, and when, is what `--durations` hides."""
    import os
    where = os.environ.get("WIRECHECK_TEST_TIMELINE")
    if where:
        import json
        import time
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(where, f"{worker}.jsonl"), "a") as out:
            out.write(json.dumps({"start": time.time(), "nodeid": item.nodeid}) + "\n")
    return None
