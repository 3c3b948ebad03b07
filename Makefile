# Two entry points for a fresh machine: `make demo` and `make test`.
# Each creates .venv (pinned versions, torch 2.13.0 CPU) if it is missing or stale.
PY := .venv/bin/python
STAMP := .venv/.framejit-installed

WORDS := framejit/_words.so

.PHONY: demo test test-torch bench browser clean

$(STAMP): pyproject.toml requirements.txt requirements-nodeps.txt
	test -x $(PY) || python3.11 -m venv .venv || python3 -m venv .venv
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

# The optional native word reader (framejit/_words.c; without it framejit reads the words via ctypes).
$(WORDS): framejit/_words.c $(STAMP)
	gcc -O2 -shared -fPIC -I"$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		framejit/_words.c -o $(WORDS) || echo "framejit: _words.c not built; version words are read via ctypes"

demo: $(STAMP) $(WORDS)
	$(PY) -m framejit demo

test: $(STAMP) $(WORDS)
	$(PY) -m pytest -q -n 2 -p no:cacheprovider tests

# The warm-start tests (fresh processes building libraries and pieces cold, then warm: about 25 minutes on 2 cores)
test-aoti: $(STAMP) $(WORDS)
	FRAMEJIT_AOTI_TESTS=1 $(PY) -m pytest -q -n 2 -p no:cacheprovider tests/persist tests/backends/test_piece_caches.py tests/backends/test_tiered.py tests/backends/test_training_library.py

# The whole suite on another torch release, in its own venv (.venv-torch-X.Y.Z, gitignored):
# `make test-torch TORCH=2.14.1`. pyproject.toml's torch range says which releases are supported.
TORCH ?= 2.14.1
TVENV := .venv-torch-$(TORCH)
TSTAMP := $(TVENV)/.framejit-installed
# The torchvision release built for that torch (only these import; the 2.13.0 CPU wheel has none that
# works): its tests and zoo rows run there and skip elsewhere. --no-deps: it must never move torch.
TORCHVISION_2.14.1 := 0.29.1
TORCHVISION := $(TORCHVISION_$(TORCH))

$(TSTAMP): pyproject.toml requirements.txt requirements-nodeps.txt
	test -x $(TVENV)/bin/python || python3.11 -m venv $(TVENV) || python3 -m venv $(TVENV)
	$(TVENV)/bin/python -m pip install -q torch==$(TORCH)
	grep -v '^torch==' requirements.txt > $(TVENV)/requirements-no-torch.txt
	$(TVENV)/bin/python -m pip install -q -r $(TVENV)/requirements-no-torch.txt
	$(TVENV)/bin/python -m pip install -q --no-deps -r requirements-nodeps.txt
	$(if $(TORCHVISION),$(TVENV)/bin/python -m pip install -q --no-deps torchvision==$(TORCHVISION))
	$(TVENV)/bin/python -m pip install -q --no-deps -e .
	touch $(TSTAMP)

test-torch: $(TSTAMP)
	test -f $(WORDS) || gcc -O2 -shared -fPIC -I"$$($(TVENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
		framejit/_words.c -o $(WORDS) || true
	$(TVENV)/bin/python -m pytest -q -n 2 -p no:cacheprovider tests

bench: $(STAMP) $(WORDS)
	$(PY) bench/overhead.py

# Debian's chromium, for the headless-browser check of framejit.report (tests/test_report.py skips
# without it). Needs root and apt; .ci/run calls it only when both are there.
browser:
	test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

clean:
	rm -rf .venv .venv-torch-* build *.egg-info $(WORDS)
