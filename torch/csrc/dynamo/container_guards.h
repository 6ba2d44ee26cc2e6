// Leaf guards on the contents of containers: membership, dict versions,
// attribute absence, mapping keys and the tensor dimension markings.
#pragma once

#include <vector>

#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

// (key in value) == contains, for a dict.
class DICT_CONTAINS : public LeafGuard {
 public:
  DICT_CONTAINS(bool contains, py::object key, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "DICT_CONTAINS"; }

 private:
  bool contains_;
  py::object key_;
};

// (item in value) == contains, for a set or frozenset.
class SET_CONTAINS : public LeafGuard {
 public:
  SET_CONTAINS(bool contains, py::object item, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "SET_CONTAINS"; }

 private:
  bool contains_;
  py::object item_;
};

// The dict has not been modified since build time: CPython 3.11 gives every
// dict a version tag that changes on each insertion, deletion or update, and
// tags are never reused within a process.
class DICT_VERSION : public LeafGuard {
 public:
  DICT_VERSION(py::object value, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "DICT_VERSION"; }

 private:
  uint64_t version_;
};

// not hasattr(value, attr_name).
class NO_HASATTR : public LeafGuard {
 public:
  NO_HASATTR(py::object attr_name, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "NO_HASATTR"; }

 private:
  py::str attr_name_;
};

// list(value.keys()) == expected keys, in order.
class MAPPING_KEYS_MATCH : public LeafGuard {
 public:
  MAPPING_KEYS_MATCH(py::object value, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "MAPPING_KEYS_MATCH"; }

 private:
  py::list keys_;
};

// The user's dimension markings on a tensor (mark_dynamic and friends):
// each marking present at compile time may only shrink, each absent one must
// stay absent, and the dependent attributes gated on an unbacked marking
// keep their value.
class DIMENSION_DYNAMIC_MARKING_GUARD : public LeafGuard {
 public:
  DIMENSION_DYNAMIC_MARKING_GUARD(py::dict expected, py::list absent, py::dict dependent, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "DIMENSION_DYNAMIC_MARKING_GUARD"; }

 private:
  struct Expected {
    py::str name;
    py::object allowed;  // a set: the runtime marking must be a subset
  };
  struct Dependent {
    py::str name;
    py::object value;
    py::str gate;
  };
  std::vector<Expected> expected_;
  std::vector<py::str> absent_;
  std::vector<Dependent> dependent_;
};

// Looks an attribute up without materialising an AttributeError when it is
// missing. Returns 1 and sets *result (new reference), 0 when absent, -1 on
// any other error (which stays set).
int lookup_optional_attr(PyObject* obj, PyObject* name, PyObject** result);

}  // namespace dynamo_guards
