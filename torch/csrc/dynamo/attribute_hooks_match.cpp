#include "torch/csrc/dynamo/attribute_hooks_match.h"

#include "torch/csrc/dynamo/argument_checks.h"
#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

ATTRIBUTE_HOOKS_MATCH::ATTRIBUTE_HOOKS_MATCH(
    py::object cls,
    py::object getattribute_chain,
    py::object getattr,
    py::object parts,
    py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), has_getattr_(!getattr.is_none()) {
  if (!PyType_Check(cls.ptr())) {
    throw py::type_error("cls must be a class");
  }
  if (!PyList_Check(getattribute_chain.ptr()) && !PyTuple_Check(getattribute_chain.ptr())) {
    throw py::type_error("getattribute_chain must be a list or tuple");
  }
  getattro_ = reinterpret_cast<PyTypeObject*>(cls.ptr())->tp_getattro;
  for (py::handle hook : getattribute_chain) {
    chain_.emplace_back(py::reinterpret_borrow<py::object>(hook), true);
  }
  if (has_getattr_) {
    getattr_ = HeldObject(std::move(getattr), true);
  }
}

bool ATTRIBUTE_HOOKS_MATCH::hooks_match(PyTypeObject* type) const {
  PyObject* mro = type->tp_mro;  // borrowed
  if (mro == nullptr || !PyTuple_Check(mro)) {
    return false;
  }
  size_t next = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* klass = PyTuple_GET_ITEM(mro, i);  // borrowed
    PyObject* own = PyType_Check(klass) ? type_dict(reinterpret_cast<PyTypeObject*>(klass)) : nullptr;  // borrowed
    if (own == nullptr) {
      return false;
    }
    PyObject* hook = PyDict_GetItemWithError(own, getattribute_name());  // borrowed
    if (hook == nullptr) {
      if (PyErr_Occurred()) {
        discard_python_error();
        return false;
      }
      continue;
    }
    if (next == chain_.size() || chain_[next].get() != hook) {
      return false;
    }
    ++next;
  }
  if (next != chain_.size()) {
    return false;
  }
  PyObject* getattr = _PyType_Lookup(type, getattr_name());  // borrowed
  if (!has_getattr_) {
    return getattr == nullptr;
  }
  return getattr != nullptr && getattr == getattr_.get();
}

bool ATTRIBUTE_HOOKS_MATCH::check(PyObject* value) {
  PyTypeObject* type = Py_TYPE(value);
  return type->tp_getattro == getattro_ && cache_.get(type, [this](PyTypeObject* t) { return hooks_match(t); });
}

}  // namespace dynamo_guards
