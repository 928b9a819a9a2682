# The two commands of the README. Both create .venv with Python 3.11 and install everything first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA ?= ../shared/data

.PHONY: demo test benchmark clean

# torch is installed on its own first, pinned, so that pip takes the local CPU wheel and nothing
# later pulls a multi-GB CUDA build; the rest is held to the verified set by the constraints file.
$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c requirements/constraints.txt -e ".[dev,onnx]"
	touch $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/sciembed demo --data $(DATA) --output demo-output

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest

benchmark: $(STAMP)
	cd benchmarks && HF_HUB_OFFLINE=1 ../$(BIN)/python encode_speed.py --data $(abspath $(DATA))
	cd benchmarks && HF_HUB_OFFLINE=1 ../$(BIN)/python model_overhead.py --data $(abspath $(DATA))

clean:
	rm -rf $(VENV) build src/*.egg-info
