"""The black-box conformance kit: pytest plugin, target connections, requirement catalogues,
suites, strategies and the ``wirecheck`` command line."""
