#include "torch/csrc/dynamo/code_parts.h"

#include <string>

namespace dynamo_guards {

namespace {

bool holds_only_exact_strs(PyObject* tuple) {
  for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(tuple); i < n; ++i) {
    if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(tuple, i))) {
      return false;
    }
  }
  return true;
}

}  // namespace

CodeParts::CodeParts(const py::handle& parts) {
  PyObject* tuple = PySequence_Tuple(parts.ptr());  // new reference
  if (tuple == nullptr) {
    PyErr_Clear();
    throw py::type_error("verbose_code_parts must be an iterable, got " + std::string(Py_TYPE(parts.ptr())->tp_name));
  }
  if (holds_only_exact_strs(tuple)) {
    PyObject_GC_UnTrack(tuple);  // see the header: no cycle can pass through it
  }
  parts_ = py::reinterpret_steal<py::tuple>(tuple);
}

py::list CodeParts::as_list() const {
  PyObject* list = PySequence_List(parts_.ptr());  // new reference
  if (list == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::list>(list);
}

}  // namespace dynamo_guards
