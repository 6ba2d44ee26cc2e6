#include "torch/csrc/dynamo/argument_checks.h"

#include <string>

namespace dynamo_guards {

py::str interned_name(const py::object& name, const char* what) {
  if (!PyUnicode_Check(name.ptr())) {
    throw py::type_error(std::string(what) + " must be a str, got " + Py_TYPE(name.ptr())->tp_name);
  }
  PyObject* s = Py_NewRef(name.ptr());
  PyUnicode_InternInPlace(&s);
  return py::reinterpret_steal<py::str>(s);
}

Py_ssize_t index_key(const py::object& key, const char* what) {
  if (!PyLong_Check(key.ptr())) {
    throw py::type_error(std::string(what) + " must be an int, got " + Py_TYPE(key.ptr())->tp_name);
  }
  Py_ssize_t i = PyLong_AsSsize_t(key.ptr());
  if (i == -1 && PyErr_Occurred()) {
    throw py::error_already_set();
  }
  return i;
}

void require_hashable(const py::object& key, const char* what) {
  if (PyObject_Hash(key.ptr()) == -1) {
    PyErr_Clear();
    throw py::type_error(std::string(what) + " must be hashable, got " + Py_TYPE(key.ptr())->tp_name);
  }
}

}  // namespace dynamo_guards
