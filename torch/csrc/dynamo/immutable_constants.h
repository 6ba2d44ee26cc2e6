#pragma once

#include <Python.h>

namespace dynamo_guards {

// Immutable constants: values of the exact builtin types None, bool, int,
// float, complex, str and bytes, and exact tuples of them nested at most 32
// deep (deeper ones are compared by identity). Dynamo's trace
// bakes such a value into the graph by value, so a guard on it needs only
// an equal value, not the same object (a class constant reassigned to an
// equal new object must not recompile).
bool is_immutable_constant(PyObject* value);  // value borrowed

// Whether a and b (borrowed) are the same immutable constant: the same exact
// type and an equal value that no operation can tell apart. Floats and
// complexes compare by their bits, so 0.0 and -0.0 differ (1 / x does) and a
// NaN equals only a NaN of the same bits. Never raises; false when either
// is not an immutable constant.
bool same_immutable_constant(PyObject* a, PyObject* b);

}  // namespace dynamo_guards
