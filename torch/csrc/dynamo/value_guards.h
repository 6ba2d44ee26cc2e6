// Leaf guards on a single Python value: its type, identity, equality,
// singleton-ness, length and a few scalar predicates.
#pragma once

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

// An exact tuple or list: len() reads its size field and runs no Python.
inline bool has_own_length(PyObject* value) {
  return PyTuple_CheckExact(value) || PyList_CheckExact(value);
}

// Records nothing when `value` is anchored (its identity is pinned by a
// validated dict), else re-runs `guard`.
void record_identity_of(LeafGuard* guard, MemoRecorder& recorder, PyObject* value);


// type(value) is the type whose id() was taken at build time. Holds no
// reference to the type (stock torch keeps only the id, with a weakref
// finalizer owned by the builder).
class TYPE_MATCH : public LeafGuard {
 public:
  TYPE_MATCH(py::object type_id, py::object parts, py::object stack);
  bool check(PyObject* value) override { return reinterpret_cast<uintptr_t>(Py_TYPE(value)) == type_id_; }
  const char* kind() const override { return "TYPE_MATCH"; }
  void record(MemoRecorder& recorder, PyObject* value) override { recorder.type(value); }
  bool records_on_held_value(PyObject*) const override { return true; }
  uintptr_t type_id() const { return type_id_; }

 private:
  uintptr_t type_id_;
};

// value is the object whose id() was taken at build time; no reference held.
class ID_MATCH : public LeafGuard {
 public:
  ID_MATCH(py::object obj_id, py::object parts, py::object stack);
  bool check(PyObject* value) override { return reinterpret_cast<uintptr_t>(value) == id_; }
  const char* kind() const override { return "ID_MATCH"; }
  bool may_run_python() const override { return false; }
  bool decides_by_identity() const override { return true; }
  bool records_on_held_value(PyObject*) const override { return true; }
  // An anchored value is the very object the validated dict holds.
  void record(MemoRecorder& recorder, PyObject* value) override { record_identity_of(this, recorder, value); }

 private:
  uintptr_t id_;
};

// type(value) is type(expected) and value == expected. Keeps a strong
// reference to `expected`, a constant captured at compile time.
//
// An immutable constant (immutable_constants.h: None, bool, int, float,
// complex, str, bytes, tuples of them) is compared as the trace used it, by
// exact type and value, floats and complexes by their bits: stock's `==`
// passes -0.0 for 0.0, which `x / eps` or `x * eps` tell apart. An equal
// new object still passes; a NaN now passes a NaN of the same bits (torch
// gives a NaN constant its own FLOAT_IS_NAN guard). Anything else keeps
// torch's `==`.
class EQUALS_MATCH : public LeafGuard {
 public:
  EQUALS_MATCH(py::object expected, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "EQUALS_MATCH"; }
  // Immutable constants compare equal as long as the object is the same.
  void record(MemoRecorder& recorder, PyObject* value) override;
  // An immutable constant is compared after an exact type check, by its
  // bits: no __eq__ runs; nor does one for a type whose `==` is known to
  // run none (compares_without_python).
  bool may_run_python() const override { return runs_python_; }
  bool records_on_held_value(PyObject*) const override { return compare_by_value_; }

 private:
  py::object expected_;
  PyTypeObject* expected_type_;  // borrowed: kept alive by expected_
  bool compare_by_value_;        // an immutable constant
  bool runs_python_;
};

// value is a given singleton (None, True or False) or is not None.
class SingletonGuard : public LeafGuard {
 public:
  enum class Want { IsNone, IsNotNone, IsTrue, IsFalse };
  SingletonGuard(Want want, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override;
  void record(MemoRecorder& recorder, PyObject* value) override { record_identity_of(this, recorder, value); }
  bool may_run_python() const override { return false; }
  // The verdict compares the value's address with a singleton's, which
  // lives as long as the interpreter.
  bool decides_by_identity() const override { return true; }
  bool records_on_held_value(PyObject*) const override { return true; }

 private:
  Want want_;
};

class NONE_MATCH : public SingletonGuard {
 public:
  NONE_MATCH(py::object parts, py::object stack) : SingletonGuard(Want::IsNone, std::move(parts), std::move(stack)) {}
};
class NOT_NONE : public SingletonGuard {
 public:
  NOT_NONE(py::object parts, py::object stack) : SingletonGuard(Want::IsNotNone, std::move(parts), std::move(stack)) {}
};
class TRUE_MATCH : public SingletonGuard {
 public:
  TRUE_MATCH(py::object parts, py::object stack) : SingletonGuard(Want::IsTrue, std::move(parts), std::move(stack)) {}
};
class FALSE_MATCH : public SingletonGuard {
 public:
  FALSE_MATCH(py::object parts, py::object stack) : SingletonGuard(Want::IsFalse, std::move(parts), std::move(stack)) {}
};

// len(value) == length, for any sequence.
class LENGTH_CHECK : public LeafGuard {
 public:
  LENGTH_CHECK(py::object length, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "LENGTH_CHECK"; }
  // On an exact tuple or list the length is the object's own size field:
  // a Type step pins that type first, and the Leaf step then runs no Python.
  void record(MemoRecorder& recorder, PyObject* value) override;
  bool records_on_held_value(PyObject* value) const override { return has_own_length(value); }

 private:
  Py_ssize_t length_;
};

// value is a dict (or subclass) of the given length.
class DICT_LENGTH : public LeafGuard {
 public:
  DICT_LENGTH(py::object length, py::object parts, py::object stack);
  bool check(PyObject* value) override { return PyDict_Check(value) && PyDict_GET_SIZE(value) == length_; }
  const char* kind() const override { return "DICT_LENGTH"; }
  void record(MemoRecorder& recorder, PyObject* value) override { recorder.dict(value); }

 private:
  Py_ssize_t length_;
};

// type(value) matches and operator.length_hint(value) == length: the number
// of items a tuple iterator has left.
class TUPLE_ITERATOR_LEN : public LeafGuard {
 public:
  TUPLE_ITERATOR_LEN(py::object length, py::object type_id, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "TUPLE_ITERATOR_LEN"; }

 private:
  Py_ssize_t length_;
  uintptr_t type_id_;
};

// value is a float NaN / a complex with a NaN part. Built without a value
// (torch 2.13, 2.14) any such NaN passes; built with the NaN the trace saw
// (torch 2.15: torch_release.h, kNanGuardsTakeTheValue) only the same
// immutable constant passes (same_immutable_constant: a float or complex of
// the same bits, part by part): NaNs differ in sign and payload, which
// math.copysign and struct.pack tell apart.
class FLOAT_IS_NAN : public LeafGuard {
 public:
  using LeafGuard::LeafGuard;
  FLOAT_IS_NAN(py::object expected, py::object parts, py::object stack);  // a float, or what float() takes
  bool check(PyObject* value) override;
  const char* kind() const override { return "FLOAT_IS_NAN"; }

 private:
  py::object expected_;  // an exact float; null when built without a value
};
class COMPLEX_IS_NAN : public LeafGuard {
 public:
  using LeafGuard::LeafGuard;
  COMPLEX_IS_NAN(py::object expected, py::object parts, py::object stack);  // a complex, or what complex() takes
  bool check(PyObject* value) override;
  const char* kind() const override { return "COMPLEX_IS_NAN"; }

 private:
  py::object expected_;  // an exact complex; null when built without a value
};

// torch.utils._device.CURRENT_DEVICE still equals its value at build time.
// The module dict is read directly; the guard holds a reference to it.
class DEFAULT_DEVICE : public LeafGuard {
 public:
  DEFAULT_DEVICE(py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "DEFAULT_DEVICE"; }

 private:
  py::dict module_dict_;
  py::str name_;
  py::object expected_;
};

// Reads a Python int argument as an id()/address; raises TypeError otherwise.
uintptr_t checked_object_id(const py::object& obj, const char* what);
// Reads a non-negative Python int as a length; raises TypeError/ValueError.
Py_ssize_t checked_length(const py::object& obj, const char* what);

}  // namespace dynamo_guards
