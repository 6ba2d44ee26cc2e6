#include "torch/csrc/dynamo/module_attr_guards.h"

#include "torch/csrc/dynamo/argument_checks.h"

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

CLASS_ATTR_MATCH::CLASS_ATTR_MATCH(py::object name, py::object expected, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), name_(interned_name(name, "name")) {
  PyObject* ref = PyWeakref_NewRef(expected.ptr(), nullptr);
  if (ref != nullptr) {
    expected_ = py::reinterpret_steal<py::object>(ref);
    expected_is_weakref_ = true;
  } else {
    PyErr_Clear();
    expected_ = std::move(expected);
    expected_is_weakref_ = false;
  }
}

PyObject* CLASS_ATTR_MATCH::expected() const {
  if (!expected_is_weakref_) {
    return expected_.ptr();
  }
  PyObject* target = PyWeakref_GetObject(expected_.ptr());  // borrowed
  return target == Py_None ? nullptr : target;
}

bool CLASS_ATTR_MATCH::check(PyObject* value) {
  PyTypeObject* type = Py_TYPE(value);
  if (type == cached_type_ && cached_tag_ != 0 && PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) &&
      type->tp_version_tag == cached_tag_) {
    return cached_verdict_;
  }
  PyObject* found = _PyType_Lookup(type, name_.ptr());  // borrowed; assigns a version tag
  PyObject* want = expected();
  bool verdict = want != nullptr && found == want;
  cached_type_ = type;
  cached_tag_ = PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) ? type->tp_version_tag : 0;
  cached_verdict_ = verdict;
  return verdict;
}

}  // namespace dynamo_guards
