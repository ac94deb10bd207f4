# wirecheck — every target does its own set-up; `make install` is idempotent.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: captures install real-peers signalr-clients clients matrix browser tshark java spark allure-cli report-allure run demo test bench soak fuzz fuzz-smoke docs screenshots clean

install: $(STAMP)

# Re-install only when the project metadata changes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The main job: reference broker of every registered protocol + its black-box suite.
run: install
	$(VENV)/bin/wirecheck run --reports reports

demo: run

# Real peers for the tests that talk to real servers: Debian's RabbitMQ (3.10.8, stream
# plugin included). Skipped when already installed; the package index is refreshed only
# when the first attempt fails (a fresh CI image has none).
real-peers:
	test -x /usr/lib/rabbitmq/bin/rabbitmq-server || \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends rabbitmq-server || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends rabbitmq-server; }

# The real @microsoft/signalr client (+ MessagePack protocol) for tests/reference_impl/signalr/test_signalr_real_clients.py,
# pinned by tests/support/signalr_js/package-lock.json, run with the machine's node. Re-installed only
# when the package files change.
SIGNALR_JS := tests/support/signalr_js
signalr-clients: $(SIGNALR_JS)/node_modules/.installed

$(SIGNALR_JS)/node_modules/.installed: $(SIGNALR_JS)/package.json $(SIGNALR_JS)/package-lock.json
	cd $(SIGNALR_JS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The real client libraries of examples/check-client/ (the matrix's clients): the Python ones
# pinned by its requirements.txt into .venv-clients, apart from the kit, as an application has
# them; the npm ones pinned by its package-lock.json. Re-installed only when those change.
CLIENTS_VENV := .venv-clients
CLIENTS_JS   := examples/check-client
# Libraries whose pins clash with .venv-clients' (or with each other: three signalrcore forks
# install a top-level `signalrcore`) get an environment each, .venv-clients-NAME, from
# examples/check-client/requirements-NAME.txt.
CLIENTS_ENVS := signalr-async signalrcore-async signalrcore-deng signalrcoreppi xy-signalrcore \
                signalrcore1 signalrcoreplus
clients: $(CLIENTS_VENV)/.installed $(CLIENTS_JS)/node_modules/.installed \
         $(foreach e,$(CLIENTS_ENVS),$(CLIENTS_VENV)-$(e)/.installed)

$(CLIENTS_VENV)-%/.installed: $(CLIENTS_JS)/requirements-%.txt
	test -x $(CLIENTS_VENV)-$*/bin/python || $(PYTHON) -m venv $(CLIENTS_VENV)-$*
	$(CLIENTS_VENV)-$*/bin/python -m pip install --quiet -r $<
	touch $@

$(CLIENTS_VENV)/.installed: $(CLIENTS_JS)/requirements.txt
	test -x $(CLIENTS_VENV)/bin/python || $(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/python -m pip install --quiet -r $(CLIENTS_JS)/requirements.txt
	touch $@

$(CLIENTS_JS)/node_modules/.installed: $(CLIENTS_JS)/package.json $(CLIENTS_JS)/package-lock.json
	cd $(CLIENTS_JS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The conformance matrix of real implementations (tools/matrix.py): the server suite against
# RabbitMQ 3.10.8 and aiosignalr's hub, check-client with the drivers of examples/check-client/
# against the real clients; reports/matrix/index.html and matrix.json. Not part of `make test`
# (tests/conformance/suites/test_rmqs_suite_real.py runs one server and two clients of it).
matrix: install real-peers clients
	$(PY) tools/matrix.py --out reports/matrix

# Headless Chromium for the report test (tests/conformance/report/test_reports.py opens index.html in it).
browser:
	test -x /usr/bin/chromium-headless-shell || \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium-headless-shell || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium-headless-shell; }

# tshark and dumpcap for the tests that capture real peers on loopback (tests/support/tshark_capture.py).
# The package's debconf question (may non-root users capture?) is answered "no" beforehand.
tshark:
	command -v tshark >/dev/null || { \
	  echo 'wireshark-common wireshark-common/install-setuid boolean false' | debconf-set-selections && \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends tshark || \
	    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends tshark; }; }; }

# A Java runtime (Debian's default JRE, 17 on bookworm, unless one is there): for allure's
# command line and for Spark (wirecheck analyze; pyspark itself comes with `make install`).
java:
	command -v java >/dev/null || \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends default-jre-headless || \
	  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends default-jre-headless; }

spark: install java

# allure's command line from npm (pinned by tools/allure/package-lock.json).
ALLURE_DIR := tools/allure
ALLURE     := $(ALLURE_DIR)/node_modules/.bin/allure
allure-cli: java $(ALLURE_DIR)/node_modules/.installed

$(ALLURE_DIR)/node_modules/.installed: $(ALLURE_DIR)/package.json $(ALLURE_DIR)/package-lock.json
	cd $(ALLURE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Every protocol's suite against its reference broker with allure results, then allure's HTML
# report in reports/allure-report/.
report-allure: install allure-cli
	rm -rf reports/allure-results
	-$(VENV)/bin/wirecheck run --reports reports --alluredir reports/allure-results
	$(ALLURE) generate reports/allure-results -o reports/allure-report --clean

test: install real-peers signalr-clients browser allure-cli tshark spark
	$(PY) -m pytest -n auto --dist worksteal -q $(PYTEST_ARGS)

# The documentation site (docs/, mkdocs.yml) into site/; --strict: a broken link or anchor, or a
# page left out of the nav, fails the build. The CLI reference, the requirement catalogues and
# the benchmark tables are generated during the build (tools/gen_docs.py is its hook).
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# The report screenshots of the docs (docs/images/report.png, transcript.png), taken again.
screenshots: install browser
	$(PY) tools/screenshots.py

bench: install real-peers
	$(PY) benchmarks/run.py --out reports/bench.json

# The full hardening runs (hostile targets, hostile clients, kill -9 durability, load): JSON
# in reports/soak.json and reports/soak/; `make test` runs their quick versions.
soak: install real-peers
	$(PY) -m soak.run --out reports/soak.json
	WIRECHECK_FUZZ_SOAK=1 $(PY) -m pytest -q -p no:cacheprovider tests/fuzz/live/test_fuzz_soak.py

# Record the capture corpus again (captures/<protocol>/*.pcap.gz and MANIFEST.json); real
# SignalR clients need `make signalr-clients`.
captures: install signalr-clients
	$(PY) tools/record_captures.py

# Every fuzz target for a few seconds (a one-minute campaign; also `tox -e fuzz-smoke`).
fuzz-smoke: install
	$(VENV)/bin/wirecheck fuzz --all --time 60

# A campaign of FUZZ_TIME (default 10 minutes) over every target, both cores; the working
# corpora grow in reports/fuzz/work/ between runs; summary and findings in reports/fuzz/.
FUZZ_TIME ?= 10m
fuzz: install
	$(VENV)/bin/wirecheck fuzz --all --time $(FUZZ_TIME) --workdir reports/fuzz/work

clean:
	rm -rf $(VENV) reports/*.xml reports/*.json .pytest_cache .hypothesis site
