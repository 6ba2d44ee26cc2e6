// Validation of builder arguments shared by accessors and leaf guards: bad
// input raises a clear TypeError / ValueError at build time, so the hot path
// can assume well-formed keys.
#pragma once

#include <pybind11/pybind11.h>

namespace dynamo_guards {

namespace py = pybind11;

// `name` as an interned str (identity-comparable in dict lookups).
py::str interned_name(const py::object& name, const char* what);
// `key` as a Py_ssize_t index.
Py_ssize_t index_key(const py::object& key, const char* what);
// Raises TypeError unless hash(key) succeeds.
void require_hashable(const py::object& key, const char* what);

}  // namespace dynamo_guards
