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

// The only item of `parts` when it is a one-item list or tuple holding an
// exact str (borrowed), else nullptr.
PyObject* lone_exact_str(PyObject* parts) {
  if ((PyList_CheckExact(parts) && PyList_GET_SIZE(parts) == 1) || (PyTuple_CheckExact(parts) && PyTuple_GET_SIZE(parts) == 1)) {
    PyObject* item = PySequence_Fast_GET_ITEM(parts, 0);
    return PyUnicode_CheckExact(item) ? item : nullptr;
  }
  return nullptr;
}

}  // namespace

CodeParts::CodeParts(const py::handle& parts) {
  if (PyObject* only = lone_exact_str(parts.ptr())) {
    parts_ = py::reinterpret_borrow<py::object>(only);
    return;
  }
  PyObject* tuple = PySequence_Tuple(parts.ptr());  // new reference
  if (tuple == nullptr) {
    PyErr_Clear();
    throw py::type_error("verbose_code_parts must be an iterable, got " + std::string(Py_TYPE(parts.ptr())->tp_name));
  }
  if (holds_only_exact_strs(tuple)) {
    PyObject_GC_UnTrack(tuple);  // see the header: no cycle can pass through it
  }
  parts_ = py::reinterpret_steal<py::object>(tuple);
}

py::list CodeParts::as_list() const {
  if (PyUnicode_CheckExact(parts_.ptr())) {
    py::list list(1);
    list[0] = parts_;
    return list;
  }
  PyObject* list = PySequence_List(parts_.ptr());  // new reference
  if (list == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::list>(list);
}

}  // namespace dynamo_guards
