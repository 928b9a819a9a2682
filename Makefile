# The two commands of the README. Both create .venv with Python 3.11 and install everything first; `make test`
# also builds the side venv of the transformers 4.57.6 line that the compatibility tests run in.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SIDE := .venv-tf457
SIDE_STAMP := $(SIDE)/.installed
DATA ?= ../shared/data

.PHONY: demo test side-venv benchmark style quality docs clean

# torch is installed on its own first, pinned, so that pip takes the local CPU wheel and nothing
# later pulls a multi-GB CUDA build; the rest is held to the verified set by the constraints file.
$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c requirements/constraints.txt -e ".[dev,onnx,openvino,docs,ray]"
	touch $(STAMP)

# transformers 4.57.6 (+ adapters 1.3.0 as the reference for format adapters), without sciembed.
$(SIDE_STAMP): requirements/side-tf457.txt
	$(PYTHON) -m venv $(SIDE)
	$(SIDE)/bin/pip install --quiet torch==2.13.0
	$(SIDE)/bin/pip install --quiet -r requirements/side-tf457.txt
	touch $(SIDE_STAMP)

side-venv: $(SIDE_STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/sciembed demo --data $(DATA) --output demo-output $(if $(OVERWRITE),--overwrite)

# One pytest worker per CPU (at most 4: each holds its own models), each on one thread (OMP_NUM_THREADS, inherited by
# the processes tests start): with torch's own threads, the workers wait on each other and the suite runs no faster
# than in one process.
test: $(STAMP) $(SIDE_STAMP)
	OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 SCIEMBED_TF457_PYTHON=$(abspath $(SIDE))/bin/python \
		$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile

# For developers: `make style` formats and applies ruff's safe fixes; `make quality` checks (CI runs it first).
style: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

quality: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The documentation site in site/; --strict fails on a broken link, a missing page or an unresolved API reference.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

benchmark: $(STAMP)
	cd benchmarks && HF_HUB_OFFLINE=1 ../$(BIN)/python encode_speed.py --data $(abspath $(DATA))
	cd benchmarks && HF_HUB_OFFLINE=1 ../$(BIN)/python model_overhead.py --data $(abspath $(DATA))

clean:
	rm -rf $(VENV) $(SIDE) build site src/*.egg-info
