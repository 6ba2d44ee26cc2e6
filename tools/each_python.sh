#!/usr/bin/env bash
# Runs one of the Makefile's jobs on each (CPython, torch) configuration it is
# asked for, in that configuration's own virtual environment
# (.venv-X.Y-torchT), and says at the end which configurations it ran, how
# each did, and which interpreters it could not find.
# Exits nonzero if the job failed on any configuration it ran; an interpreter
# the machine does not have is reported, not failed.
#
# Usage: tools/each_python.sh JOB CONFIG...
#   JOB: setup | test | bench | bench-zoo | sanitize
#   CONFIG: PYTHON:TORCH, a CPython minor release and a torch release,
#           e.g. 3.12:2.15.0 (the Makefile builds the list from PYTHONS and
#           TORCH, or takes its default matrix)
#
# bench: each configuration writes
# benchmarks/dynamo/results/guard_overhead-X.Y-torchT.json (BENCH_ARGS passes
# options to the runner); then report.py prints the results of the
# configurations whose run passed side by side and writes one chart of them
# all, benchmarks/dynamo/results/guard_overhead.png. bench-zoo: the same
# runner on the zoo (--models zoo), writing results/zoo-X.Y-torchT.json,
# then report.py's zoo tables.
#
# Where an interpreter comes from: `pythonX.Y` on PATH, else pyenv's
# newest X.Y.* (PYENV_VERSION=... pyenv which python).
#
# The venv is made once per configuration and the project installed into it
# (a regular, non-editable install, so that two torch releases on one
# interpreter each have their own _C; its CMake tree is
# build/cmake-X.Y-torchT). torch 2.13.0 on 3.11 is the CPU wheel on disk,
# 2.14.1 on 3.11 a CUDA build on disk; every other pair is the registry's
# CUDA build, about 4.7 GB. The machine's pip configuration caps torch at the
# releases on disk, so the install is given no constraint file
# (PIP_CONSTRAINT=/dev/null) and pins torch itself. The project is
# re-installed when pyproject.toml, setup.py, CMakeLists.txt or a source
# under torch/ is newer than the venv's stamp.
set -uo pipefail
cd "$(dirname "$0")/.."

job=${1:?usage: tools/each_python.sh JOB PYTHON:TORCH...}
shift
[[ $# -gt 0 ]] || { echo "each_python: no configurations given" >&2; exit 2; }

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

RESULTS=benchmarks/dynamo/results
DEPS=("setuptools>=64" wheel cmake ninja pytest expecttest hypothesis transformers matplotlib)

is_minor() {  # whether interpreter $1 runs and is CPython minor release $2
  [[ $("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) == "$2" ]]
}

find_python() {  # prints the interpreter for minor release $1, or nothing
  local v=$1 candidate full
  # On PATH; pyenv's shims are there too, but only run under the pyenv
  # version they are selected for, so they must be tried, not trusted.
  candidate=$(command -v "python$v" 2>/dev/null || true)
  if [[ -n $candidate ]] && is_minor "$candidate" "$v"; then
    echo "$candidate"
    return
  fi
  command -v pyenv >/dev/null 2>&1 || return 0
  full=$(pyenv versions --bare 2>/dev/null | grep -E "^${v//./\\.}\.[0-9]+$" | sort -V | tail -n 1)
  [[ -n $full ]] || return 0
  candidate=$(PYENV_VERSION=$full pyenv which python 2>/dev/null || true)
  [[ -n $candidate ]] && is_minor "$candidate" "$v" && echo "$candidate"
}

ensure_venv() {  # $1: venv, $2: interpreter, $3: torch release; prints nothing, fails loudly
  local venv=$1 base=$2 torch_release=$3 stamp=$1/.dynamo_guards_installed
  if [[ ! -x $venv/bin/python ]]; then
    "$base" -m venv "$venv" && "$venv/bin/python" -m pip install --quiet --upgrade pip || return 1
  fi
  if [[ ! -f $stamp ]] || [[ -n $(find pyproject.toml setup.py CMakeLists.txt torch -newer "$stamp" -print -quit) ]]; then
    # Dated when the install starts: a source edited while it runs is
    # newer than the stamp, and the next run installs it.
    local started=$venv/.dynamo_guards_installing
    touch "$started"
    PIP_CONSTRAINT=/dev/null "$venv/bin/python" -m pip install --quiet "torch==$torch_release" "${DEPS[@]}" || return 1
    # cmake and ninja come from the venv; torch is the one just installed.
    PATH="$PWD/$venv/bin:$PATH" DYNAMO_GUARDS_BUILD_DIR="$PWD/build/cmake-${venv#.venv-}" \
      "$venv/bin/python" -m pip install --quiet --no-deps --no-build-isolation . || return 1
    mv "$started" "$stamp"
  fi
}

run_job() {  # $1: venv, $2: configuration name (X.Y-torchT); runs $job with that venv's python
  local py=$1/bin/python name=$2
  case $job in
    setup) ;;
    test) "$py" -m pytest test/dynamo -q -p no:cacheprovider ;;
    bench)
      rm -f "$RESULTS/guard_overhead-$name.json"  # never report an earlier run's figures
      "$py" benchmarks/dynamo/guard_overhead.py --json "$RESULTS/guard_overhead-$name.json" ${BENCH_ARGS:-}
      ;;
    bench-zoo)
      rm -f "$RESULTS/zoo-$name.json"
      "$py" benchmarks/dynamo/guard_overhead.py --models zoo --rounds "${ZOO_ROUNDS:-10}" --json "$RESULTS/zoo-$name.json"
      ;;
    sanitize) tools/sanitize.sh "$py" ;;
    *) echo "each_python: unknown job '$job'" >&2; return 2 ;;
  esac
}

ran=() passed=() failed=() missing=()
for config in "$@"; do
  v=${config%%:*} torch_release=${config#*:}
  if [[ $v == "$config" || -z $torch_release ]]; then
    echo "each_python: '$config' is not PYTHON:TORCH (e.g. 3.12:2.15.0)" >&2
    exit 2
  fi
  name=$v-torch$torch_release
  base=$(find_python "$v")
  if [[ -z $base ]]; then
    missing+=("$v")
    echo "== $job on CPython $v, torch $torch_release: CPython $v not found on this machine (neither python$v on PATH nor pyenv)"
    continue
  fi
  echo "== $job on CPython $v ($("$base" -c 'import platform; print(platform.python_version())'), $base), torch $torch_release"
  start=$SECONDS
  if ensure_venv ".venv-$name" "$base" "$torch_release" && run_job ".venv-$name" "$name"; then
    ran+=("$v with torch $torch_release: passed in $((SECONDS - start)) s")
    passed+=("$name")
  else
    ran+=("$v with torch $torch_release: FAILED after $((SECONDS - start)) s")
    failed+=("$name")
  fi
done

echo
echo "== $job: summary"
for line in "${ran[@]}"; do echo "   ran CPython $line"; done
for v in "${missing[@]}"; do echo "   not found: CPython $v"; done
[[ ${#ran[@]} -gt 0 ]] || { echo "each_python: no interpreter found for $job" >&2; exit 1; }
if [[ $job == bench && ${#passed[@]} -gt 0 ]]; then
  echo
  reports=()
  for name in "${passed[@]}"; do reports+=("$RESULTS/guard_overhead-$name.json"); done
  ".venv-${passed[0]}/bin/python" benchmarks/dynamo/report.py --summary-only --plot "$RESULTS/guard_overhead.png" "${reports[@]}" ||
    failed+=("report")
fi
if [[ $job == bench-zoo && ${#passed[@]} -gt 0 ]]; then
  echo
  reports=()
  for name in "${passed[@]}"; do reports+=("$RESULTS/zoo-$name.json"); done
  ".venv-${passed[0]}/bin/python" benchmarks/dynamo/report.py --zoo-only "${reports[@]}" || failed+=("report")
fi
[[ ${#failed[@]} -eq 0 ]]
