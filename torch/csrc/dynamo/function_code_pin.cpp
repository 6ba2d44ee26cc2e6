#include "torch/csrc/dynamo/function_code_pin.h"

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

}  // namespace

std::shared_ptr<FunctionCodePin> FunctionCodePin::for_class_attribute(
    PyObject* attribute,
    const py::list& parts,
    const py::object& stack) {
  if (PyFunction_Check(attribute)) {
    return std::make_shared<FunctionCodePin>(attribute, attribute, parts, stack);
  }
  if (!Py_IS_TYPE(attribute, &PyClassMethod_Type)) {
    return nullptr;
  }
  py::object function = py::reinterpret_steal<py::object>(classmethod_function(attribute));
  if (!function || !PyFunction_Check(function.ptr())) {
    return nullptr;
  }
  return std::make_shared<FunctionCodePin>(attribute, function.ptr(), parts, stack);
}

FunctionCodePin::FunctionCodePin(PyObject* attribute, PyObject* function, py::list parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)),
      classmethod_(attribute != function ? py::reinterpret_borrow<py::object>(attribute) : py::none()),
      function_(weak_reference(function)),
      code_(weak_reference(PyFunction_GET_CODE(function))) {}

PyObject* FunctionCodePin::current_function() const {
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

bool FunctionCodePin::check(PyObject* /*value*/) {
  PyObject* function = current_function();  // borrowed
  return function != nullptr && PyFunction_GET_CODE(function) == own_weakref_referent(code_.ptr());
}

}  // namespace dynamo_guards
