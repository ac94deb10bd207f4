"""wirecheck: a conformance test kit and fuzzing harness for five binary messaging protocols.

Everything the kit installs lives under this one package: :mod:`wirecheck.reference_impl`
(codecs, sessions, reference brokers and clients), :mod:`wirecheck.conformance` (the pytest
plugin, the black-box suites, reports, replay and the command line), :mod:`wirecheck.fuzz`
(fuzz targets and campaigns) and :mod:`wirecheck.pipeline` (the Spark jobs). Importing this
package imports none of them.
"""
from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("wirecheck")
except PackageNotFoundError:          # a checkout on sys.path without an install
    __version__ = "0+unknown"
