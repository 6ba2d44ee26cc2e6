#include "torch/csrc/dynamo/function_code_match.h"

#include <structmember.h>

#include <cstring>

#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

namespace {

// The `__func__` member CPython publishes for classmethod objects
// (PyClassMethod_Type.tp_members): `cm.__func__` ends in reading it, and
// reading it directly skips the attribute lookup. Null if the type stopped
// publishing it.
PyMemberDef* classmethod_func_member() {
  static PyMemberDef* member = [] {
    for (PyMemberDef* m = PyClassMethod_Type.tp_members; m != nullptr && m->name != nullptr; ++m) {
      if (std::strcmp(m->name, "__func__") == 0) {
        return m;
      }
    }
    return static_cast<PyMemberDef*>(nullptr);
  }();
  return member;
}

// An exact classmethod's function (new reference), or nullptr with no
// error set.
PyObject* classmethod_function(PyObject* cm) {
  PyMemberDef* member = classmethod_func_member();
  PyObject* f = member != nullptr ? PyMember_GetOne(reinterpret_cast<const char*>(cm), member)  // new
                                  : PyObject_GetAttrString(cm, "__func__");                    // new
  if (f == nullptr) {
    PyErr_Clear();
  }
  return f;
}

py::object weak_reference(PyObject* obj) {
  PyObject* ref = PyWeakref_NewRef(obj, nullptr);  // new
  if (ref == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(ref);
}

// The function `attribute` is or wraps (new reference); TypeError for
// anything else.
py::object function_of(const py::object& attribute) {
  if (PyFunction_Check(attribute.ptr())) {
    return attribute;
  }
  if (Py_IS_TYPE(attribute.ptr(), &PyClassMethod_Type)) {
    py::object function = py::reinterpret_steal<py::object>(classmethod_function(attribute.ptr()));
    if (function && PyFunction_Check(function.ptr())) {
      return function;
    }
  }
  throw py::type_error(
      std::string("FUNCTION_CODE_MATCH needs a function or a classmethod wrapping one, got ") +
      Py_TYPE(attribute.ptr())->tp_name);
}

}  // namespace

FUNCTION_CODE_MATCH::FUNCTION_CODE_MATCH(py::object attribute, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)) {
  py::object function = function_of(attribute);
  classmethod_ = function.ptr() != attribute.ptr() ? attribute : py::none();
  function_ = weak_reference(function.ptr());
  code_ = weak_reference(PyFunction_GET_CODE(function.ptr()));
}

PyObject* FUNCTION_CODE_MATCH::current_function() const {
  PyObject* pinned = own_weakref_referent(function_.ptr());  // borrowed
  if (pinned == nullptr || classmethod_.is_none()) {
    return pinned;
  }
  PyObject* wrapped = classmethod_function(classmethod_.ptr());  // new
  // The classmethod holds its function, so the pointer stays valid after
  // the reference taken here is dropped.
  Py_XDECREF(wrapped);
  return wrapped == pinned ? pinned : nullptr;
}

bool FUNCTION_CODE_MATCH::check(PyObject* /*value*/) {
  PyObject* function = current_function();  // borrowed
  return function != nullptr && PyFunction_GET_CODE(function) == own_weakref_referent(code_.ptr());
}

}  // namespace dynamo_guards
