// What a guard evaluation reports when it is asked to explain itself.
//
// The fast check and the verbose check are one code path: every node and
// leaf takes a `CheckContext*`; the fast path passes nullptr and pays one
// predictable branch per executed guard. The verbose path passes a context,
// which counts executed guards and records the first failure.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace dynamo_guards {

namespace py = pybind11;

class MemoRecorder;

struct CheckContext {
  // Set while a SubtreeMemo records what a full check reads.
  MemoRecorder* recorder = nullptr;
  int64_t num_guards_executed = 0;
  bool failed = false;
  // list[str]: the failing guard's code parts, or one specific reason.
  py::object verbose_code_parts;
  py::object user_stack;

  void record_failure(py::object parts, py::object stack) {
    if (failed) {
      return;
    }
    failed = true;
    verbose_code_parts = std::move(parts);
    user_stack = std::move(stack);
  }

  void record_failure(const std::string& reason) {
    py::list parts;
    parts.append(py::str(reason));
    record_failure(std::move(parts), py::none());
  }
};

// Guard evaluation must never leak a Python exception into the caller's
// frame: an error raised while reading a value means the value is not what
// was guarded, which is a failed guard. Called right after a C-API call that
// may have set an error.
inline void discard_python_error() {
  if (PyErr_Occurred()) {
    PyErr_Clear();
  }
}

// The verdict of a Python call that answers a guard (`result`: its new
// reference, or null when it raised): only the True singleton passes; an
// error is discarded, as above.
inline bool call_returned_true(PyObject* result) {
  if (result == nullptr) {
    discard_python_error();
    return false;
  }
  bool passed = result == Py_True;
  Py_DECREF(result);
  return passed;
}

}  // namespace dynamo_guards
