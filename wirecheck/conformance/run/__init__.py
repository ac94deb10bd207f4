"""The machinery of a suite run behind the pytest plugin (plugin.py): the target's lifecycle
(lifecycle.py), signals, held reports and the culprit search (held_reports.py, culprits.py,
isolation.py, health_reruns.py), the run of every protocol (all_protocols.py), paths."""
