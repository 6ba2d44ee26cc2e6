#include "torch/csrc/dynamo/value_guards.h"

#include <cmath>

#include "torch/csrc/dynamo/immutable_constants.h"

namespace dynamo_guards {

uintptr_t checked_object_id(const py::object& obj, const char* what) {
  if (!PyLong_CheckExact(obj.ptr())) {
    throw py::type_error(std::string(what) + " must be an int (an id()), got " + Py_TYPE(obj.ptr())->tp_name);
  }
  unsigned long long id = PyLong_AsUnsignedLongLong(obj.ptr());
  if (PyErr_Occurred()) {
    throw py::error_already_set();
  }
  return static_cast<uintptr_t>(id);
}

Py_ssize_t checked_length(const py::object& obj, const char* what) {
  if (!PyLong_Check(obj.ptr())) {
    throw py::type_error(std::string(what) + " must be an int, got " + Py_TYPE(obj.ptr())->tp_name);
  }
  Py_ssize_t n = PyLong_AsSsize_t(obj.ptr());
  if (PyErr_Occurred()) {
    throw py::error_already_set();
  }
  if (n < 0) {
    throw py::value_error(std::string(what) + " must not be negative");
  }
  return n;
}

void record_identity_of(LeafGuard* guard, MemoRecorder& recorder, PyObject* value) {
  if (!recorder.anchored(value)) {
    recorder.leaf(guard, value);
  }
}

TYPE_MATCH::TYPE_MATCH(py::object type_id, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), type_id_(checked_object_id(type_id, "type_id")) {}

ID_MATCH::ID_MATCH(py::object obj_id, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), id_(checked_object_id(obj_id, "id_val")) {}

// A list, dict or set constant is copied (shallowly): comparing against the
// caller's own object would pass by identity after an in-place mutation.
static py::object snapshot_mutable_container(const py::object& value) {
  PyObject* v = value.ptr();
  if (PyList_CheckExact(v)) {
    return py::reinterpret_steal<py::object>(PySequence_List(v));
  }
  if (PyDict_CheckExact(v)) {
    return py::reinterpret_steal<py::object>(PyDict_Copy(v));
  }
  if (PySet_CheckExact(v)) {
    return py::reinterpret_steal<py::object>(PySet_New(v));
  }
  return value;
}

namespace {

// torch.device (borrowed from the torch module, which lives as long as the
// process), or nullptr.
PyTypeObject* torch_device_type() {
  static PyTypeObject* type = [] {
    PyObject* torch = PyImport_ImportModule("torch");  // new
    PyObject* device = torch != nullptr ? PyObject_GetAttrString(torch, "device") : nullptr;  // new
    Py_XDECREF(torch);
    PyTypeObject* found = device != nullptr && PyType_Check(device) ? reinterpret_cast<PyTypeObject*>(device) : nullptr;
    Py_XDECREF(device);
    PyErr_Clear();
    return found;
  }();
  return type;
}

// Whether `a == b` for two objects of the exact type `type` runs no Python
// code. The type must be immutable (no __eq__ can be set on it later); its
// comparison then is object's identity compare (torch.dtype, torch.layout:
// NotImplemented both ways, then identity), or torch.device's, which
// compares the two devices' type and index in C++ and returns a bool.
bool compares_without_python(PyTypeObject* type) {
  if (!PyType_HasFeature(type, Py_TPFLAGS_IMMUTABLETYPE)) {
    return false;
  }
  return type->tp_richcompare == PyBaseObject_Type.tp_richcompare || type == torch_device_type();
}

}  // namespace

EQUALS_MATCH::EQUALS_MATCH(py::object expected, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)),
      expected_(snapshot_mutable_container(expected)),
      expected_type_(Py_TYPE(expected.ptr())),
      compare_by_value_(is_immutable_constant(expected.ptr())),
      runs_python_(!compare_by_value_ && !compares_without_python(expected_type_)) {}

bool EQUALS_MATCH::check(PyObject* value) {
  if (Py_TYPE(value) != expected_type_) {
    return false;
  }
  if (compare_by_value_) {
    return same_immutable_constant(value, expected_.ptr());
  }
  // Identity short-circuits inside RichCompareBool, as in the Python
  // expression `value == expected` evaluated by CPython's `==` on containers.
  int eq = PyObject_RichCompareBool(value, expected_.ptr(), Py_EQ);
  if (eq < 0) {
    discard_python_error();
    return false;
  }
  return eq == 1;
}

void EQUALS_MATCH::record(MemoRecorder& recorder, PyObject* value) {
  PyObject* v = expected_.ptr();
  bool immutable = v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
      PyUnicode_CheckExact(v) || PyBytes_CheckExact(v) || PyComplex_CheckExact(v);
  // An anchored value is the very object the validated dict holds: the
  // same bits as the last time it passed.
  if (immutable) {
    record_identity_of(this, recorder, value);
  } else {
    recorder.leaf(this, value);
  }
}

SingletonGuard::SingletonGuard(Want want, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), want_(want) {}

bool SingletonGuard::check(PyObject* value) {
  switch (want_) {
    case Want::IsNone:
      return value == Py_None;
    case Want::IsNotNone:
      return value != Py_None;
    case Want::IsTrue:
      return value == Py_True;
    case Want::IsFalse:
      return value == Py_False;
  }
  return false;
}

const char* SingletonGuard::kind() const {
  switch (want_) {
    case Want::IsNone:
      return "NONE_MATCH";
    case Want::IsNotNone:
      return "NOT_NONE";
    case Want::IsTrue:
      return "TRUE_MATCH";
    case Want::IsFalse:
      return "FALSE_MATCH";
  }
  return "?";
}

LENGTH_CHECK::LENGTH_CHECK(py::object length, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), length_(checked_length(length, "length")) {}

bool LENGTH_CHECK::check(PyObject* value) {
  Py_ssize_t n = PyObject_Length(value);
  if (n < 0) {
    discard_python_error();
    return false;
  }
  return n == length_;
}

void LENGTH_CHECK::record(MemoRecorder& recorder, PyObject* value) {
  if (!has_own_length(value)) {
    recorder.leaf(this, value);
    return;
  }
  recorder.type(value);
  recorder.python_free_leaf(this, value);
}

DICT_LENGTH::DICT_LENGTH(py::object length, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), length_(checked_length(length, "length")) {}

TUPLE_ITERATOR_LEN::TUPLE_ITERATOR_LEN(py::object length, py::object type_id, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)),
      length_(checked_length(length, "length")),
      type_id_(checked_object_id(type_id, "type_id")) {}

bool TUPLE_ITERATOR_LEN::check(PyObject* value) {
  if (reinterpret_cast<uintptr_t>(Py_TYPE(value)) != type_id_) {
    return false;
  }
  Py_ssize_t n = PyObject_LengthHint(value, -1);
  if (n < 0) {
    discard_python_error();
    return false;
  }
  return n == length_;
}

namespace {

// float(value) / complex(value) as an exact float / complex (new), or the
// TypeError they raise.
py::object exact_float(const py::object& value) {
  double v = PyFloat_AsDouble(value.ptr());
  if (v == -1.0 && PyErr_Occurred()) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(PyFloat_FromDouble(v));
}

py::object exact_complex(const py::object& value) {
  Py_complex c = PyComplex_AsCComplex(value.ptr());
  if (c.real == -1.0 && PyErr_Occurred()) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(PyComplex_FromCComplex(c));
}

}  // namespace

FLOAT_IS_NAN::FLOAT_IS_NAN(py::object expected, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), expected_(exact_float(expected)) {}

bool FLOAT_IS_NAN::check(PyObject* value) {
  if (!PyFloat_CheckExact(value)) {
    return false;
  }
  return expected_ ? same_immutable_constant(value, expected_.ptr()) : std::isnan(PyFloat_AS_DOUBLE(value));
}

COMPLEX_IS_NAN::COMPLEX_IS_NAN(py::object expected, py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), expected_(exact_complex(expected)) {}

bool COMPLEX_IS_NAN::check(PyObject* value) {
  if (!PyComplex_CheckExact(value)) {
    return false;
  }
  if (expected_) {
    return same_immutable_constant(value, expected_.ptr());
  }
  Py_complex c = PyComplex_AsCComplex(value);
  return std::isnan(c.real) || std::isnan(c.imag);
}

DEFAULT_DEVICE::DEFAULT_DEVICE(py::object parts, py::object stack)
    : LeafGuard(std::move(parts), std::move(stack)), name_("CURRENT_DEVICE") {
  module_dict_ = py::module_::import("torch.utils._device").attr("__dict__");
  expected_ = module_dict_[name_];
}

bool DEFAULT_DEVICE::check(PyObject* /*value*/) {
  PyObject* current = PyDict_GetItemWithError(module_dict_.ptr(), name_.ptr());  // borrowed
  if (current == nullptr) {
    discard_python_error();
    return false;
  }
  int eq = PyObject_RichCompareBool(current, expected_.ptr(), Py_EQ);
  if (eq < 0) {
    discard_python_error();
    return false;
  }
  return eq == 1;
}

}  // namespace dynamo_guards
