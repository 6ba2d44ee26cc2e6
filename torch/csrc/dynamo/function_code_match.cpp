#include "torch/csrc/dynamo/function_code_match.h"

#include <structmember.h>

#include <cstring>

#include "torch/csrc/dynamo/python_compat.h"

namespace dynamo_guards {

namespace {

// The member `name` that `type` publishes in tp_members (`__func__` of
// classmethod, `fget` of property): `obj.name` ends in reading it, and
// reading it directly skips the attribute lookup. Null if the type stopped
// publishing it.
PyMemberDef* published_member(PyTypeObject* type, const char* name) {
  for (PyMemberDef* m = type->tp_members; m != nullptr && m->name != nullptr; ++m) {
    if (std::strcmp(m->name, name) == 0) {
      return m;
    }
  }
  return nullptr;
}

// The member of an exact classmethod or property that holds the function
// it calls; null for any other object.
PyMemberDef* wrapped_function_member(PyObject* wrapper) {
  static PyMemberDef* const classmethod_func = published_member(&PyClassMethod_Type, "__func__");
  static PyMemberDef* const property_getter = published_member(&PyProperty_Type, "fget");
  if (Py_IS_TYPE(wrapper, &PyClassMethod_Type)) {
    return classmethod_func;
  }
  if (Py_IS_TYPE(wrapper, &PyProperty_Type)) {
    return property_getter;
  }
  return nullptr;
}

// The function an exact classmethod or property calls (new reference), or
// nullptr with no error set.
PyObject* wrapped_function(PyObject* wrapper, PyMemberDef* member) {
  PyObject* f = member != nullptr ? PyMember_GetOne(reinterpret_cast<const char*>(wrapper), member)  // new
                                  : nullptr;
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
  PyMemberDef* member = wrapped_function_member(attribute.ptr());
  py::object function = py::reinterpret_steal<py::object>(wrapped_function(attribute.ptr(), member));
  if (function && PyFunction_Check(function.ptr())) {
    return function;
  }
  throw py::type_error(
      std::string("FUNCTION_CODE_MATCH needs a function, or a classmethod or property calling one, got ") +
      Py_TYPE(attribute.ptr())->tp_name);
}

}  // namespace

FUNCTION_CODE_MATCH::FUNCTION_CODE_MATCH(py::object attribute, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)) {
  py::object function = function_of(attribute);
  wrapper_ = function.ptr() != attribute.ptr() ? attribute : py::none();
  function_ = weak_reference(function.ptr());
  code_ = weak_reference(PyFunction_GET_CODE(function.ptr()));
}

PyObject* FUNCTION_CODE_MATCH::current_function() const {
  PyObject* pinned = own_weakref_referent(function_.ptr());  // borrowed
  if (pinned == nullptr || wrapper_.is_none()) {
    return pinned;
  }
  PyObject* wrapped = wrapped_function(wrapper_.ptr(), wrapped_function_member(wrapper_.ptr()));  // new
  // The wrapper holds its function, so the pointer stays valid after the
  // reference taken here is dropped.
  Py_XDECREF(wrapped);
  return wrapped == pinned ? pinned : nullptr;
}

bool FUNCTION_CODE_MATCH::check(PyObject* /*value*/) {
  PyObject* function = current_function();  // borrowed
  return function != nullptr && PyFunction_GET_CODE(function) == own_weakref_referent(code_.ptr());
}

}  // namespace dynamo_guards
