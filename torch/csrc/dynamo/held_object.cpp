#include "torch/csrc/dynamo/held_object.h"

#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

HeldObject::HeldObject(py::object obj, bool weakly) {
  PyObject* ref = weakly ? PyWeakref_NewRef(obj.ptr(), nullptr) : nullptr;  // new
  if (ref != nullptr) {
    held_ = py::reinterpret_steal<py::object>(ref);
    is_weakref_ = true;
    return;
  }
  PyErr_Clear();  // not weakly referenceable (or not asked to be)
  held_ = std::move(obj);
}

PyObject* HeldObject::get() const {
  if (!is_weakref_) {
    return held_.ptr();
  }
  return own_weakref_referent(held_.ptr());
}

}  // namespace dynamo_guards
