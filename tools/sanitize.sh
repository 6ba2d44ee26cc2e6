#!/usr/bin/env bash
# `make sanitize`: builds dynamo_guards._C with AddressSanitizer and
# UndefinedBehaviorSanitizer (CMake option DYNAMO_GUARDS_SANITIZE) and runs the
# whole test suite against it. Any sanitizer report ends the run nonzero.
#
# Usage: tools/sanitize.sh [PYTHON] [extra pytest arguments...]
# (`make sanitize PYTHONS=3.12` runs it with that interpreter's venv.)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${1:-.venv-3.11-torch2.13.0/bin/python}
shift || true
# cmake and ninja come from the venv, as they do for `pip install -e .`.
export PATH="$(cd "$(dirname "$PY")" && pwd):$PATH"

# The instrumented _C is written into its own package tree, next to symlinks to
# the Python sources, so the _C installed in the venv is never
# touched and the two builds never share a CMake cache.
# One tree per venv (an interpreter and a torch release): a tree's CMake
# cache keeps the torch libraries it found first.
BUILD=$ROOT/build/asan-$(basename "$(cd "$(dirname "$PY")/.." && pwd)")
PKG=$BUILD/pkg/dynamo_guards
mkdir -p "$PKG"
rm -f "$PKG"/*.py                    # drops links to sources since deleted
ln -s "$ROOT"/torch/_dynamo/*.py "$PKG"/

# RelWithDebInfo: -O2 keeps the run time bearable, -g gives reports file:line.
cmake -S "$ROOT" -B "$BUILD/cmake" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPython_EXECUTABLE="$("$PY" -c 'import sys; print(sys.executable)')" \
  -DDYNAMO_GUARDS_OUTPUT_DIR="$PKG" \
  -DDYNAMO_GUARDS_SANITIZE=ON >/dev/null
cmake --build "$BUILD/cmake"

SO=$(ls "$PKG"/_C*.so)
# The runtimes the extension was linked against, not whatever g++ is first on
# PATH: a libasan of another GCC release would not match the instrumentation.
runtime() { ldd "$SO" | awk -v lib="$1.so" 'index($1, lib) == 1 { print $3 }'; }
ASAN_LIB=$(runtime libasan)
STDCXX_LIB=$(runtime libstdc++)
[[ -n $ASAN_LIB && -n $STDCXX_LIB ]] || { echo "sanitize: $SO is not linked against libasan" >&2; exit 1; }

# The interpreter is not instrumented, so the ASan runtime is preloaded: it has
# to be the first library loaded to intercept malloc and friends. libstdc++ is
# preloaded too because ASan resolves the real __cxa_throw once, at start-up;
# python itself does not load libstdc++, and without it the first C++ exception
# (pybind11 raises through them) dies on an ASan CHECK.
export LD_PRELOAD="$ASAN_LIB $STDCXX_LIB"
# detect_leaks=0: CPython and torch keep interned objects, caches and
# singletons until exit by design, and LeakSanitizer reports them all.
# abort_on_error=1: the first report ends the process with SIGABRT instead of
# exit(1), so pytest's faulthandler prints the Python stack, which names the
# test. halt_on_error=1 is ASan's default, spelled out because the run relies
# on it.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1
# The build already passes -fno-sanitize-recover=undefined; these add the C++
# stack and the same abort, and keep the report fatal should that flag go.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:abort_on_error=1
# CPython's small-object allocator would hand our C++ code PyObject memory that
# ASan never sees; with plain malloc, a reference-count bug that frees an object
# early is reported as a heap-use-after-free at the access.
export PYTHONMALLOC=malloc
# The sanitized tree goes first on sys.path; the editable install's finder is
# appended to sys.meta_path, after the path search, so this tree wins. The
# plugin under tools/ fails the session unless _C really is $SO.
export PYTHONPATH="$BUILD/pkg:$ROOT/tools${PYTHONPATH:+:$PYTHONPATH}"
export DYNAMO_GUARDS_EXPECTED_C="$SO"

# --capture=sys: pytest captures only Python's sys.stdout/stderr, so the
# sanitizers' reports, written to file descriptor 2 by the runtime, reach the
# terminal. With the default fd capture they would go to a per-test temporary
# file that is lost when the report aborts the process. (log_path is no way
# out: with libasan loaded first, UBSan's reports still go to stderr.)
exec "$PY" -m pytest test/dynamo -q -p no:cacheprovider --capture=sys -p sanitize_check "$@"
