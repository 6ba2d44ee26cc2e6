#!/usr/bin/env bash
# Runs one of the Makefile's jobs on each CPython it is asked for, in that
# interpreter's own virtual environment (.venv-X.Y), and says at the end
# which interpreters it ran, how each did, and which it could not find.
# Exits nonzero if the job failed on any interpreter it ran; an interpreter
# the machine does not have is reported, not failed.
#
# Usage: tools/each_python.sh JOB VERSION...
#   JOB: setup | test | bench | sanitize
#
# bench: each interpreter writes benchmarks/dynamo/results/guard_overhead-X.Y.json
# (BENCH_ARGS passes options to the runner); then report.py prints the
# results of the interpreters whose run passed side by side and writes one
# chart of them all, benchmarks/dynamo/results/guard_overhead.png.
#   VERSION: a CPython minor release, e.g. 3.12
#
# Where an interpreter comes from: `pythonX.Y` on PATH, else pyenv's
# newest X.Y.* (PYENV_VERSION=... pyenv which python).
#
# The venv is made once per interpreter and the project installed into it
# (torch==2.13.0: the CPU wheel on disk for 3.11, the registry's CUDA build,
# about 4.7 GB, for 3.12 and 3.13); it is re-installed when pyproject.toml,
# setup.py, CMakeLists.txt or a C++ source is newer than its stamp.
set -uo pipefail
cd "$(dirname "$0")/.."

job=${1:?usage: tools/each_python.sh JOB VERSION...}
shift
[[ $# -gt 0 ]] || { echo "each_python: no interpreter versions given" >&2; exit 2; }

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

RESULTS=benchmarks/dynamo/results
DEPS=(torch==2.13.0 "setuptools>=64" wheel cmake ninja pytest expecttest hypothesis transformers matplotlib)

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

ensure_venv() {  # $1: version, $2: interpreter; prints nothing, fails loudly
  local v=$1 base=$2 venv=.venv-$1 stamp=.venv-$1/.dynamo_guards_installed
  if [[ ! -x $venv/bin/python ]]; then
    "$base" -m venv "$venv" && "$venv/bin/python" -m pip install --quiet --upgrade pip || return 1
  fi
  local stale=
  if [[ ! -f $stamp ]] || [[ -n $(find pyproject.toml setup.py CMakeLists.txt torch/csrc/dynamo -newer "$stamp" -print -quit) ]]; then
    stale=1
  fi
  if [[ -n $stale ]]; then
    "$venv/bin/python" -m pip install --quiet "${DEPS[@]}" || return 1
    # cmake and ninja come from the venv.
    PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" -m pip install --quiet --no-build-isolation -e . || return 1
    touch "$stamp"
  fi
}

run_job() {  # $1: version; runs $job with that venv's python
  local v=$1 py=.venv-$1/bin/python
  case $job in
    setup) ;;
    test) "$py" -m pytest test/dynamo -q -p no:cacheprovider ;;
    bench)
      rm -f "$RESULTS/guard_overhead-$v.json"  # never report an earlier run's figures
      "$py" benchmarks/dynamo/guard_overhead.py --json "$RESULTS/guard_overhead-$v.json" ${BENCH_ARGS:-}
      ;;
    sanitize) tools/sanitize.sh "$py" ;;
    *) echo "each_python: unknown job '$job'" >&2; return 2 ;;
  esac
}

ran=() passed=() failed=() missing=()
for v in "$@"; do
  base=$(find_python "$v")
  if [[ -z $base ]]; then
    missing+=("$v")
    echo "== $job on CPython $v: not found on this machine (neither python$v on PATH nor pyenv)"
    continue
  fi
  echo "== $job on CPython $v ($("$base" -c 'import platform; print(platform.python_version())'), $base)"
  start=$SECONDS
  if ensure_venv "$v" "$base" && run_job "$v"; then
    ran+=("$v: passed in $((SECONDS - start)) s")
    passed+=("$v")
  else
    ran+=("$v: FAILED after $((SECONDS - start)) s")
    failed+=("$v")
  fi
done

echo
echo "== $job: summary"
for line in "${ran[@]}"; do echo "   ran $line"; done
for v in "${missing[@]}"; do echo "   not found: CPython $v"; done
[[ ${#ran[@]} -gt 0 ]] || { echo "each_python: no interpreter found for $job" >&2; exit 1; }
if [[ $job == bench && ${#passed[@]} -gt 0 ]]; then
  echo
  reports=()
  for v in "${passed[@]}"; do reports+=("$RESULTS/guard_overhead-$v.json"); done
  ".venv-${passed[0]}/bin/python" benchmarks/dynamo/report.py --summary-only --plot "$RESULTS/guard_overhead.png" "${reports[@]}" ||
    failed+=("report")
fi
[[ ${#failed[@]} -eq 0 ]]
