// NN_MODULE_ATTR_RESOLUTION: `module.name` is still answered by
// nn.Module.__getattr__ from the given dict (_parameters, _buffers or
// _modules).
//
// Dynamo resolves such an attribute at trace time by reading
// module._modules['name'] (or _parameters/_buffers) directly and guards only
// that dict entry. Python would stop reaching that entry if the name
// appeared in the instance __dict__ (object.__setattr__), as a class
// attribute, method or property (on the class or a base), if __getattr__ or
// __getattribute__ were overridden, or if an earlier dict in
// nn.Module.__getattr__'s order gained the name. This guard, installed on the
// module's manager for every such trace-time read, fails in each of those
// cases, so the frame recompiles instead of running with the old object.
// The class-level conditions are a CachedAttrPlan (attribute_resolution.h);
// the instance-level ones are two to four dict lookups per call.
#pragma once

#include "torch/csrc/dynamo/attribute_resolution.h"
#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

class NN_MODULE_ATTR_RESOLUTION : public LeafGuard {
 public:
  NN_MODULE_ATTR_RESOLUTION(py::object name, py::object dict_name, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "NN_MODULE_ATTR_RESOLUTION"; }
  // Pinned by the class (version tag) and the module's four dicts.
  void record(MemoRecorder& recorder, PyObject* value) override {
    recorder.type_tag(value);
    recorder.module_dicts(value);
  }

 private:
  py::str name_;
  ModuleDictSlot expected_;
  CachedAttrPlan plan_;
};

// CLASS_ATTR_MATCH: looking `name` up in type(value)'s MRO still finds the
// very object Dynamo's trace found (a method, property, class constant).
// Dynamo reads class attributes at trace time and, in torch 2.13, guards
// only type(value) by id; a method replaced or deleted on the class, or a
// base class gaining an override, then goes unnoticed.
//
// Fast path: the verdict is cached with type(value) and its version tag;
// CPython changes the tag on any modification of the class or its bases,
// so an equal, valid tag means the MRO lookup would give the same answer.
// The expected object is held weakly when it supports weak references (a
// replaced method is not kept alive by the guard), strongly otherwise.
class CLASS_ATTR_MATCH : public LeafGuard {
 public:
  CLASS_ATTR_MATCH(py::object name, py::object expected, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "CLASS_ATTR_MATCH"; }
  // Pinned by the class's version tag (the class holds the expected object).
  void record(MemoRecorder& recorder, PyObject* value) override { recorder.type_tag(value); }

 private:
  // Borrowed; nullptr once a weakly held object has died.
  PyObject* expected() const;

  py::str name_;
  py::object expected_;  // the object, or a weakref to it
  bool expected_is_weakref_;
  PyTypeObject* cached_type_ = nullptr;  // identity only
  unsigned int cached_tag_ = 0;          // 0: no cached verdict
  bool cached_verdict_ = false;
};

}  // namespace dynamo_guards
