// Leaf guards on the contents of containers: membership, dict versions,
// attribute absence, mapping keys and the tensor dimension markings.
#pragma once

#include <vector>

#include "torch/csrc/dynamo/attribute_resolution.h"
#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

// (key in value) == contains, for a dict.
class DICT_CONTAINS : public LeafGuard {
 public:
  DICT_CONTAINS(bool contains, py::object key, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "DICT_CONTAINS"; }
  void record(MemoRecorder& recorder, PyObject* value) override { recorder.dict(value); }

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

// The dict has not been modified since build time: CPython 3.11 to 3.13
// give every dict a version tag that changes on each insertion, deletion or
// update, and tags are never reused within a process (dict_version in
// python_compat.h; inline_values.h for the dicts whose writes it misses).
class DICT_VERSION : public LeafGuard {
 public:
  DICT_VERSION(py::object value, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "DICT_VERSION"; }
  void record(MemoRecorder& recorder, PyObject* value) override { recorder.dict(value); }

 private:
  uint64_t version_;
};

// not hasattr(value, attr_name). For a type with the generic
// __getattribute__, no __getattr__ and no class attribute of that name, this
// is "not in the instance __dict__": a dict membership test instead of a
// failed lookup that builds an AttributeError. The choice is a
// CachedAttrPlan, re-made whenever the value's type or its version tag
// differs (see attribute_resolution.h for why that is sound).
class NO_HASATTR : public LeafGuard {
 public:
  NO_HASATTR(py::object attr_name, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "NO_HASATTR"; }
  // Soundness of the memo: unless the plan is getattr, the answer is
  // decided by the class (its version tag pins the plan) and the instance
  // __dict__ (plus _parameters, _buffers and _modules), whose versions pin
  // their contents (MemoRecorder::instance_lookup). Otherwise: re-run.
  void record(MemoRecorder& recorder, PyObject* value) override;

 private:
  py::str attr_name_;
  CachedAttrPlan plan_;
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
// keep their value. Markings live in the tensor's instance __dict__; every
// hasattr/getattr goes through a CachedAttrPlan, so for torch.Tensor (no
// such class attributes, generic getattr) each check is a dict lookup, and a
// class that gains such an attribute is re-planned (attribute_resolution.h).
class DIMENSION_DYNAMIC_MARKING_GUARD : public LeafGuard {
 public:
  DIMENSION_DYNAMIC_MARKING_GUARD(py::dict expected, py::list absent, py::dict dependent, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "DIMENSION_DYNAMIC_MARKING_GUARD"; }
  // When every marking must be absent and each is a plain instance-__dict__
  // lookup for this type, the verdict is pinned by the class's version tag
  // and the tensor's __dict__ (usually none at all); else re-run.
  void record(MemoRecorder& recorder, PyObject* value) override;

 private:
  struct Attribute {
    py::str name;
    CachedAttrPlan plan;
  };
  struct Expected {
    Attribute attr;
    py::object allowed;  // a set: the runtime marking must be a subset
  };
  struct Dependent {
    Attribute attr;
    py::object value;
    Attribute gate;
  };
  // 1 / 0 / -1 as has_attribute; *found gets a new reference when 1 and
  // found != nullptr.
  static int lookup(PyObject* value, Attribute& attr, PyObject** found);
  std::vector<Expected> expected_;
  std::vector<Attribute> absent_;
  std::vector<Dependent> dependent_;
};


}  // namespace dynamo_guards
