#include "torch/csrc/dynamo/python_guards.h"

#include "torch/csrc/dynamo/py_ref.h"

namespace dynamo_guards {

PythonPredicateGuard::PythonPredicateGuard(py::object predicate, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), predicate_(std::move(predicate)) {
  if (!PyCallable_Check(predicate_.ptr())) {
    throw py::type_error(std::string("guard predicate must be callable, got ") + Py_TYPE(predicate_.ptr())->tp_name);
  }
}

bool PythonPredicateGuard::check(PyObject* value) {
  OwnedRef result(PyObject_CallOneArg(predicate_.ptr(), value));
  if (!result) {
    discard_python_error();
    return false;
  }
  int truth = PyObject_IsTrue(result.get());
  if (truth < 0) {
    discard_python_error();
    return false;
  }
  return truth == 1;
}

void PythonPredicateGuard::explain_failure(PyObject* value, CheckContext& ctx) {
  static PyObject* explain_name = PyUnicode_InternFromString("explain");
  OwnedRef explain(PyObject_GetAttr(predicate_.ptr(), explain_name));
  if (!explain) {
    PyErr_Clear();
    LeafGuard::explain_failure(value, ctx);
    return;
  }
  OwnedRef reason(PyObject_CallOneArg(explain.get(), value));
  if (!reason || !PyUnicode_Check(reason.get())) {
    PyErr_Clear();
    LeafGuard::explain_failure(value, ctx);
    return;
  }
  py::list parts;
  parts.append(py::handle(reason.get()));
  ctx.record_failure(std::move(parts), user_stack_);
}

py::object make_python_predicate(const char* name, py::args args) {
  py::object factory = py::module_::import("dynamo_guards._python_checks").attr(name);
  return factory(*args);
}

}  // namespace dynamo_guards
