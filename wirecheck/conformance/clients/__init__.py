"""Testing client libraries: serve --check-clients (serve_check.py, scenarios.py, identity.py) and
check-client (suite.py, driver.py); the scripted brokers and the drivers are in scripted/ and
drivers/ beside this package."""
