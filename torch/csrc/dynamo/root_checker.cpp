#include "torch/csrc/dynamo/root_checker.h"

#include <pybind11/pybind11.h>

#include "torch/csrc/dynamo/root_guard_manager.h"

namespace dynamo_guards {

namespace py = pybind11;

namespace {

struct RootCheckObject {
  PyObject_HEAD
  PyObject* root_object;    // strong: the Python RootGuardManager
  RootGuardManager* root;   // borrowed from root_object
  vectorcallfunc vectorcall;
};

PyObject* root_check_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* rc = reinterpret_cast<RootCheckObject*>(self);
  if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0)) {
    PyErr_SetString(PyExc_TypeError, "RootCheck takes exactly one argument: the frame's locals");
    return nullptr;
  }
  if (rc->root == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "RootCheck has no RootGuardManager (not initialised, or cleared)");
    return nullptr;
  }
  bool ok = false;
  try {
    ok = rc->root->check_fast(args[0]);
  } catch (py::error_already_set& e) {
    e.discard_as_unraisable(__func__);
    ok = false;
  } catch (const std::exception&) {
    ok = false;
  }
  return Py_NewRef(ok ? Py_True : Py_False);
}

int root_check_init(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* root_object = nullptr;
  static const char* kwlist[] = {"root", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:RootCheck", const_cast<char**>(kwlist), &root_object)) {
    return -1;
  }
  RootGuardManager* root = nullptr;
  try {
    root = py::handle(root_object).cast<RootGuardManager*>();
  } catch (const py::cast_error&) {
    PyErr_Format(PyExc_TypeError, "RootCheck needs a dynamo_guards RootGuardManager, got %s", Py_TYPE(root_object)->tp_name);
    return -1;
  }
  auto* rc = reinterpret_cast<RootCheckObject*>(self);
  Py_XSETREF(rc->root_object, Py_NewRef(root_object));
  rc->root = root;
  rc->vectorcall = root_check_vectorcall;
  return 0;
}

PyObject* root_check_get_root(PyObject* self, void*) {
  auto* rc = reinterpret_cast<RootCheckObject*>(self);
  return Py_NewRef(rc->root_object != nullptr ? rc->root_object : Py_None);
}

int root_check_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<RootCheckObject*>(self)->root_object);
  return 0;
}

int root_check_clear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<RootCheckObject*>(self)->root_object);
  reinterpret_cast<RootCheckObject*>(self)->root = nullptr;
  return 0;
}

void root_check_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  root_check_clear(self);
  Py_TYPE(self)->tp_free(self);
}

PyObject* root_check_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "RootCheck takes no keyword arguments");
    return nullptr;
  }
  return root_check_vectorcall(self, &PyTuple_GET_ITEM(args, 0), PyTuple_GET_SIZE(args), nullptr);
}

PyGetSetDef root_check_getset[] = {
    {"root", root_check_get_root, nullptr, "The dynamo_guards RootGuardManager this check runs.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject root_check_type = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "dynamo_guards._C.RootCheck";
  t.tp_basicsize = sizeof(RootCheckObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_doc = "RootCheck(root)(f_locals) -> bool: evaluates a dynamo_guards guard tree.";
  t.tp_vectorcall_offset = offsetof(RootCheckObject, vectorcall);
  t.tp_call = root_check_call;
  t.tp_init = root_check_init;
  t.tp_new = PyType_GenericNew;
  t.tp_dealloc = root_check_dealloc;
  t.tp_traverse = root_check_traverse;
  t.tp_clear = root_check_clear;
  t.tp_getset = root_check_getset;
  return t;
}();

}  // namespace

int register_root_check_type(PyObject* module) {
  if (PyType_Ready(&root_check_type) < 0) {
    return -1;
  }
  Py_INCREF(&root_check_type);
  if (PyModule_AddObject(module, "RootCheck", reinterpret_cast<PyObject*>(&root_check_type)) < 0) {
    Py_DECREF(&root_check_type);
    return -1;
  }
  return 0;
}

}  // namespace dynamo_guards
