# The two entry points, `make bench` and `make test`, run on every supported
# CPython the machine has (PYTHONS picks a subset: `make test PYTHONS=3.12`).
# For each, tools/each_python.sh creates .venv-X.Y with that interpreter if it
# is missing, installs torch==2.13.0, the other dependencies and this project
# (building the C++ engine), runs the job, and at the end says which
# interpreters it ran and which it could not find.
PYTHONS ?= 3.11 3.12 3.13
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

RESULTS := benchmarks/dynamo/results

.PHONY: bench bench-timm test sanitize setup

# Stock vs fork guard latency on the default models, one table per model
# and interpreter, then a summary over all of them and one chart.
# (BENCH_ARGS: options for the runner, e.g. BENCH_ARGS="--rounds 20".)
bench:
	tools/each_python.sh bench $(PYTHONS)

test:
	tools/each_python.sh test $(PYTHONS)

# The whole suite against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of _C, per interpreter. It is built into build/asan-<interpreter>,
# never over the in-place _C, and run with the ASan runtime preloaded into the
# uninstrumented python; tools/sanitize.sh says why each setting is there.
# Any sanitizer report fails the run.
sanitize:
	tools/each_python.sh sanitize $(PYTHONS)

setup:
	tools/each_python.sh setup $(PYTHONS)

# timm's resnet50 and vit_base_patch16_224, on CPython 3.11. timm imports
# torchvision, whose only builds for torch 2.13 on the registries are CUDA
# builds; installed into the venv, torchvision would break transformers'
# import there too. So both go into a folder of their own, on the path of
# this run only; the benchmark says how it imports them beside the CPU wheel.
TIMM_SITE := build/timm-site
bench-timm:
	tools/each_python.sh setup 3.11
	test -d $(TIMM_SITE)/timm || .venv-3.11/bin/python -m pip install --quiet --no-deps --target $(TIMM_SITE) torchvision==0.28.0 timm
	PYTHONPATH=$(TIMM_SITE) .venv-3.11/bin/python benchmarks/dynamo/guard_overhead.py --models timm_resnet50,timm_vit --plot $(RESULTS)/guard_overhead_timm.png --json $(RESULTS)/guard_overhead_timm.json
