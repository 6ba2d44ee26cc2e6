"""pytest plugin for `make sanitize` (loaded by tools/sanitize.sh with -p).

A run that silently imported the normal, uninstrumented _C would pass while
checking nothing, so the session fails unless dynamo_guards._C is the
sanitized build named by DYNAMO_GUARDS_EXPECTED_C.
"""

from __future__ import annotations

import os

import pytest


def pytest_sessionstart(session: pytest.Session) -> None:
    from dynamo_guards import _C

    expected = os.environ["DYNAMO_GUARDS_EXPECTED_C"]
    if not os.path.samefile(_C.__file__, expected):
        raise pytest.UsageError(f"dynamo_guards._C is {_C.__file__}, not the sanitized build {expected}")
    # Printed even under -q, so the log of every run shows which _C it tested.
    session.config.pluginmanager.get_plugin("terminalreporter").write_line(f"sanitized dynamo_guards._C: {_C.__file__}")
