// An object a guard compares with by identity, held weakly when it supports
// weak references (a guard must not keep a replaced method or class
// attribute alive longer than stock torch would), strongly otherwise (an
// immutable constant, or a builtin object that takes no weak references).
// A weakly held object that died reads as nullptr, so it never matches a
// newcomer at its address.
#pragma once

#include <pybind11/pybind11.h>

namespace dynamo_guards {

namespace py = pybind11;

class HeldObject {
 public:
  // `weakly`: try a weak reference first (falls back to a strong one).
  HeldObject(py::object obj, bool weakly);
  HeldObject() = default;  // holds nothing: get() is nullptr

  PyObject* get() const;  // borrowed; nullptr once a weakly held object died

 private:
  py::object held_;  // the object, or a weakref to it
  bool is_weakref_ = false;
};

}  // namespace dynamo_guards
