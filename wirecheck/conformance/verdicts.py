"""Deprecated name of :mod:`wirecheck.conformance.report.verdicts` (docs/deprecations.md): a
suite's check that raises ``Breach`` imports it from there."""
from wirecheck.conformance.moved import warn_moved
from wirecheck.conformance.report.verdicts import *  # noqa: F401,F403

warn_moved(__name__)
