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
