#include "torch/csrc/dynamo/module_attr_guards.h"

#include "torch/csrc/dynamo/argument_checks.h"
#include "torch/csrc/dynamo/immutable_constants.h"
#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

NN_MODULE_ATTR_RESOLUTION::NN_MODULE_ATTR_RESOLUTION(
    py::object name,
    py::object dict_name,
    py::object parts,
    py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), name_(interned_name(name, "name")) {
  if (!PyUnicode_Check(dict_name.ptr())) {
    throw py::type_error("dict_name must be a str");
  }
  try {
    expected_ = module_dict_slot_from_name(dict_name.cast<std::string>());
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
}

bool NN_MODULE_ATTR_RESOLUTION::check(PyObject* value) {
  ModuleDictSlot slot = locate_in_module_dicts(value, name_.ptr(), plan_.get(Py_TYPE(value), name_.ptr()));
  if (slot == ModuleDictSlot::Error) {
    discard_python_error();
    return false;
  }
  return slot == expected_;
}

ClassAttrExpectation::ClassAttrExpectation(py::str name, py::object expected)
    : name_(std::move(name)),
      compare_by_value_(is_immutable_constant(expected.ptr())),
      expected_(std::move(expected), !compare_by_value_) {}

bool ClassAttrExpectation::found_on(PyTypeObject* type) {
  return cache_.get(type, [this](PyTypeObject* t) {
    PyObject* found = _PyType_Lookup(t, name_.ptr());  // borrowed
    PyObject* want = expected_.get();
    if (want == nullptr || found == nullptr) {
      return false;
    }
    return found == want || (compare_by_value_ && same_immutable_constant(found, want));
  });
}

CLASS_ATTR_MATCH::CLASS_ATTR_MATCH(py::object name, py::object expected, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), expectation_(interned_name(name, "name"), std::move(expected)) {}

bool CLASS_ATTR_MATCH::check(PyObject* value) { return expectation_.found_on(Py_TYPE(value)); }

METACLASS_ATTR_MATCH::METACLASS_ATTR_MATCH(py::object name, py::object expected, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)),
      name_(interned_name(name, "name")),
      on_metaclass_(name_, std::move(expected)) {}

bool METACLASS_ATTR_MATCH::check(PyObject* value) {
  // type_getattro is the order the verdict follows: a metaclass that gains
  // its own __getattribute__ (or another tp_getattro) answers otherwise.
  if (!PyType_Check(value) || Py_TYPE(value)->tp_getattro != PyType_Type.tp_getattro) {
    return false;
  }
  bool class_lacks_name = class_lacks_name_.get(
      reinterpret_cast<PyTypeObject*>(value), [this](PyTypeObject* cls) { return _PyType_Lookup(cls, name_.ptr()) == nullptr; });
  return class_lacks_name && on_metaclass_.found_on(Py_TYPE(value));
}

CLASS_ATTR_SHADOWED::CLASS_ATTR_SHADOWED(py::object name, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), name_(interned_name(name, "name")) {}

bool CLASS_ATTR_SHADOWED::check(PyObject* value) {
  bool class_yields = cache_.get(
      Py_TYPE(value), [this](PyTypeObject* type) { return instance_dict_precedes_class(type, name_.ptr()); });
  if (!class_yields) {
    return false;
  }
  PyObject* d = instance_dict(value);  // borrowed
  if (d == nullptr || !PyDict_Check(d)) {
    return false;
  }
  int found = PyDict_Contains(d, name_.ptr());
  if (found < 0) {
    discard_python_error();
    return false;
  }
  return found == 1;
}

GETATTR_FALLTHROUGH::GETATTR_FALLTHROUGH(py::object name, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), name_(interned_name(name, "name")) {}

bool GETATTR_FALLTHROUGH::check(PyObject* value) {
  bool class_silent =
      cache_.get(Py_TYPE(value), [this](PyTypeObject* type) { return _PyType_Lookup(type, name_.ptr()) == nullptr; });
  if (!class_silent) {
    return false;
  }
  PyObject* d = instance_dict(value);  // borrowed
  if (d == nullptr) {
    return true;
  }
  if (!PyDict_Check(d)) {
    return false;
  }
  PyObject* found = PyDict_GetItemWithError(d, name_.ptr());  // borrowed
  if (found == nullptr && PyErr_Occurred()) {
    discard_python_error();
    return false;
  }
  return found == nullptr;
}

NN_MODULE_HOOKS_EMPTY::NN_MODULE_HOOKS_EMPTY(py::object name, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), name_(interned_name(name, "name")) {}

bool NN_MODULE_HOOKS_EMPTY::check(PyObject* value) {
  PyObject* hooks = read_attribute(value, name_.ptr(), plan_.get(Py_TYPE(value), name_.ptr()));  // new
  if (hooks == nullptr) {
    discard_python_error();
    return false;
  }
  bool empty = PyDict_Check(hooks) && PyDict_GET_SIZE(hooks) == 0;
  Py_DECREF(hooks);
  return empty;
}

void NN_MODULE_HOOKS_EMPTY::record(MemoRecorder& recorder, PyObject* value) {
  PyObject* d = instance_dict(value);  // borrowed
  PyObject* hooks = d != nullptr && PyDict_Check(d) ? PyDict_GetItemWithError(d, name_.ptr()) : nullptr;  // borrowed
  discard_python_error();
  if (hooks == nullptr || !instance_dict_answers(value, name_.ptr(), hooks)) {
    recorder.leaf(this, value);
    return;
  }
  recorder.type_tag(value);
  recorder.object_dict(value);
  recorder.anchor(hooks);  // held by the validated __dict__
  recorder.dict(hooks);
}

}  // namespace dynamo_guards
