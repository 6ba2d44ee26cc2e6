# The two entry points. Both create .venv with the machine's python3 if it is
# missing, install torch==2.13.0 (the CPU wheel pip finds on disk), the other
# dependencies and this project (building the C++ engine), then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.dynamo_guards_installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: bench bench-timm test sanitize setup

bench: $(STAMP)
	$(PY) benchmarks/dynamo/guard_overhead.py --plot benchmarks/dynamo/results/guard_overhead.png --json benchmarks/dynamo/results/guard_overhead.json

# timm's resnet50 and vit_base_patch16_224. timm imports torchvision, whose
# only builds for torch 2.13 on the registries are CUDA builds; installed
# into .venv, torchvision would break transformers' import there too. So both
# go into a folder of their own, on the path of this run only; the benchmark
# says how it imports them beside the CPU wheel.
TIMM_SITE := build/timm-site
bench-timm: $(STAMP)
	test -d $(TIMM_SITE)/timm || $(PY) -m pip install --quiet --no-deps --target $(TIMM_SITE) torchvision==0.28.0 timm
	PYTHONPATH=$(TIMM_SITE) $(PY) benchmarks/dynamo/guard_overhead.py --models timm_resnet50,timm_vit --plot benchmarks/dynamo/results/guard_overhead_timm.png --json benchmarks/dynamo/results/guard_overhead_timm.json

test: $(STAMP)
	$(PY) -m pytest test/dynamo -q -p no:cacheprovider

# The whole suite against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of _C. It is built into build/asan, never over the in-place _C, and run
# with the ASan runtime preloaded into the uninstrumented python; the script
# says why each setting is there. Any sanitizer report fails the run.
sanitize: $(STAMP)
	tools/sanitize.sh $(PY)

setup: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml setup.py CMakeLists.txt $(wildcard torch/csrc/dynamo/*)
	$(PY) -m pip install --quiet torch==2.13.0 "setuptools>=64" wheel cmake ninja pytest expecttest hypothesis transformers matplotlib
	$(PY) -m pip install --quiet --no-build-isolation -e .
	touch $(STAMP)
