#include "torch/csrc/dynamo/immutable_constants.h"

#include <cstring>

namespace dynamo_guards {

namespace {

bool is_scalar_constant(PyObject* value) {
  return value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value) ||
      PyComplex_CheckExact(value) || PyUnicode_CheckExact(value) || PyBytes_CheckExact(value);
}

bool same_bits(const void* a, const void* b, size_t size) {
  return std::memcmp(a, b, size) == 0;
}

// Tuples nested deeper than this are not constants here (they are compared
// by identity): both walks below recurse on the C stack, and a walk in
// same_immutable_constant is bounded by its expected value's depth.
constexpr int kMaxTupleDepth = 32;

bool is_constant_within(PyObject* value, int depth) {
  if (is_scalar_constant(value)) {
    return true;
  }
  if (!PyTuple_CheckExact(value) || depth >= kMaxTupleDepth) {
    return false;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); ++i) {
    if (!is_constant_within(PyTuple_GET_ITEM(value, i), depth + 1)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool is_immutable_constant(PyObject* value) {
  return is_constant_within(value, 0);
}

bool same_immutable_constant(PyObject* a, PyObject* b) {
  if (a == b) {
    return is_immutable_constant(a);
  }
  if (Py_TYPE(a) != Py_TYPE(b)) {
    return false;
  }
  if (PyFloat_CheckExact(a)) {
    double x = PyFloat_AS_DOUBLE(a);
    double y = PyFloat_AS_DOUBLE(b);
    return same_bits(&x, &y, sizeof(double));
  }
  if (PyComplex_CheckExact(a)) {
    Py_complex x = PyComplex_AsCComplex(a);
    Py_complex y = PyComplex_AsCComplex(b);
    return same_bits(&x, &y, sizeof(Py_complex));
  }
  if (PyTuple_CheckExact(a)) {
    Py_ssize_t size = PyTuple_GET_SIZE(a);
    if (PyTuple_GET_SIZE(b) != size) {
      return false;
    }
    for (Py_ssize_t i = 0; i < size; ++i) {
      if (!same_immutable_constant(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i))) {
        return false;
      }
    }
    return true;
  }
  if (PyLong_CheckExact(a) || PyUnicode_CheckExact(a) || PyBytes_CheckExact(a)) {
    // Exact builtin types: their comparison runs no Python code and cannot
    // fail.
    return PyObject_RichCompareBool(a, b, Py_EQ) == 1;
  }
  return false;  // None and bool are singletons: a != b means different values
}

}  // namespace dynamo_guards
