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

// The object in the slot at `offset` of `wrapper` (borrowed; nullptr when
// empty).
PyObject* slot_at(PyObject* wrapper, Py_ssize_t offset) {
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(wrapper) + offset);
}

py::object weak_reference(PyObject* obj) {
  PyObject* ref = PyWeakref_NewRef(obj, nullptr);  // new
  if (ref == nullptr) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(ref);
}

[[noreturn]] void not_a_function(const py::object& attribute) {
  throw py::type_error(
      std::string("FUNCTION_CODE_MATCH needs a function, or a classmethod or property calling one, got ") +
      Py_TYPE(attribute.ptr())->tp_name);
}

}  // namespace

Py_ssize_t wrapped_function_offset(PyObject* wrapper) {
  PyMemberDef* member = wrapped_function_member(wrapper);
  if (member == nullptr || (member->type != T_OBJECT && member->type != T_OBJECT_EX)) {
    return -1;
  }
  return member->offset;
}

FUNCTION_CODE_MATCH::FUNCTION_CODE_MATCH(py::object attribute, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)) {
  PyObject* function = attribute.ptr();  // borrowed
  if (!PyFunction_Check(function)) {
    wrapper_offset_ = wrapped_function_offset(attribute.ptr());
    function = wrapper_offset_ < 0 ? nullptr : slot_at(attribute.ptr(), wrapper_offset_);
    if (function == nullptr || !PyFunction_Check(function)) {
      not_a_function(attribute);
    }
    wrapper_ = attribute;
  }
  function_ = weak_reference(function);
  code_ = weak_reference(PyFunction_GET_CODE(function));
}

PyObject* FUNCTION_CODE_MATCH::current_function() const {
  PyObject* pinned = own_weakref_referent(function_.ptr());  // borrowed
  if (pinned == nullptr || wrapper_offset_ < 0) {
    return pinned;
  }
  // The wrapper is held and of an exact builtin type (its class cannot be
  // assigned), so its layout is the one whose offset was taken.
  return slot_at(wrapper_.ptr(), wrapper_offset_) == pinned ? pinned : nullptr;
}

bool FUNCTION_CODE_MATCH::check(PyObject* /*value*/) {
  PyObject* function = current_function();  // borrowed
  return function != nullptr && PyFunction_GET_CODE(function) == own_weakref_referent(code_.ptr());
}

}  // namespace dynamo_guards
