# The two entry points, `make bench` and `make test`, run on (CPython, torch)
# configurations: PYTHONS picks interpreters, TORCH a torch release
# (`make test PYTHONS=3.12 TORCH=2.15.0`). With neither, each job runs its
# default matrix below; with one, the other takes its default (TORCH: the
# newest supported release, 2.15.0; PYTHONS: 3.11 3.12 3.13). For each
# configuration, tools/each_python.sh creates .venv-X.Y-torchT if it is
# missing, installs that torch, the other dependencies and this project
# (building the C++ engine), runs the job, and at the end says which
# configurations it ran and which interpreters it could not find.
#
# The supported releases are torch 2.13, 2.14 and 2.15 (2.13.0, 2.14.1 and
# 2.15.0 are the ones tested) on CPython 3.11, 3.12 and 3.13: any pair works.
# `make test` with no arguments covers every release and every interpreter
# at least once; `make bench` compares stock and the fork on the newest
# release on 3.12 and 3.13, and on 2.13.0 on 3.12 beside them.
TEST_MATRIX := 3.11:2.13.0 3.11:2.14.1 3.12:2.15.0 3.13:2.15.0
BENCH_MATRIX := 3.12:2.15.0 3.13:2.15.0 3.12:2.13.0
DEFAULT_PYTHONS := 3.11 3.12 3.13
DEFAULT_TORCH := 2.15.0

ifneq ($(strip $(PYTHONS)$(TORCH)),)
CONFIGS = $(foreach p,$(or $(PYTHONS),$(DEFAULT_PYTHONS)),$(foreach t,$(or $(TORCH),$(DEFAULT_TORCH)),$(p):$(t)))
TEST_CONFIGS = $(CONFIGS)
BENCH_CONFIGS = $(CONFIGS)
else
TEST_CONFIGS = $(TEST_MATRIX)
BENCH_CONFIGS = $(BENCH_MATRIX)
endif
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

RESULTS := benchmarks/dynamo/results

.PHONY: bench bench-timm bench-zoo test sanitize setup

# Stock vs fork guard latency on the default models, one table per model
# and interpreter, then a summary over all of them and one chart.
# (BENCH_ARGS: options for the runner, e.g. BENCH_ARGS="--rounds 20".)
bench:
	tools/each_python.sh bench $(BENCH_CONFIGS)

test:
	tools/each_python.sh test $(TEST_CONFIGS)

# The zoo: 37 transformers architectures from small configs (2 layers,
# width 64; guard_bench/models.py), stock vs fork on each configuration of
# `make bench`, then one table per configuration: the ratios per model, the
# median and worst, frames fallen back, compiles that differ from eager.
# (ZOO_ROUNDS: warm rounds per model, default 10; 7 to 9 minutes per
# configuration.)
bench-zoo:
	tools/each_python.sh bench-zoo $(BENCH_CONFIGS)

# The whole suite against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of _C, per configuration. It is built into build/asan-<interpreter>,
# never over the in-place _C, and run with the ASan runtime preloaded into the
# uninstrumented python; tools/sanitize.sh says why each setting is there.
# Any sanitizer report fails the run.
sanitize:
	tools/each_python.sh sanitize $(TEST_CONFIGS)

setup:
	tools/each_python.sh setup $(TEST_CONFIGS)

# timm's resnet50 and vit_base_patch16_224, on CPython 3.11. timm imports
# torchvision, whose only builds for torch 2.13 on the registries are CUDA
# builds; installed into the venv, torchvision would break transformers'
# import there too. So both go into a folder of their own, on the path of
# this run only; the benchmark says how it imports them beside the CPU wheel.
TIMM_SITE := build/timm-site
bench-timm:
	tools/each_python.sh setup 3.11:2.13.0
	test -d $(TIMM_SITE)/timm || .venv-3.11-torch2.13.0/bin/python -m pip install --quiet --no-deps --target $(TIMM_SITE) torchvision==0.28.0 timm
	PYTHONPATH=$(TIMM_SITE) .venv-3.11-torch2.13.0/bin/python benchmarks/dynamo/guard_overhead.py --models timm_resnet50,timm_vit --plot $(RESULTS)/guard_overhead_timm.png --json $(RESULTS)/guard_overhead_timm.json
