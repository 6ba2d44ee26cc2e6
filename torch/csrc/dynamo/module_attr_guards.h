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
#include "torch/csrc/dynamo/held_object.h"
#include "torch/csrc/dynamo/leaf_guard.h"

namespace dynamo_guards {

// A verdict that depends only on a class: kept with the class and its
// version tag. CPython changes the tag on any modification of the class or
// its bases, so an equal, valid tag means the class lookup would give the
// same answer.
class ClassVerdictCache {
 public:
  template <typename Compute>
  bool get(PyTypeObject* type, Compute compute) {
    if (type == type_ && tag_ != 0 && type_version_tag(type) == tag_) {
      return verdict_;
    }
    verdict_ = compute(type);  // _PyType_Lookup inside assigns a tag
    type_ = type;
    tag_ = type_version_tag(type);
    return verdict_;
  }

 private:
  PyTypeObject* type_ = nullptr;  // identity only
  unsigned int tag_ = 0;          // 0: nothing cached
  bool verdict_ = false;
};

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

// What a class lookup of `name` must keep finding: the very object the
// trace found there, or an equal immutable constant. The expected object
// is held weakly when it supports weak references (a replaced method is not
// kept alive by the guard), strongly otherwise. An immutable constant
// (immutable_constants.h) matches an equal one: the trace used its value,
// so `C.eps = float("1e-3")` keeps the verdict, as stock's. The verdict is
// a ClassVerdictCache of the type looked up in.
class ClassAttrExpectation {
 public:
  ClassAttrExpectation(py::str name, py::object expected);
  // Whether `type`'s MRO lookup of the name finds the expected object.
  bool found_on(PyTypeObject* type);

 private:
  py::str name_;
  bool compare_by_value_;
  HeldObject expected_;  // weakly where possible; strongly for a constant
  ClassVerdictCache cache_;
};

// CLASS_ATTR_MATCH: looking `name` up in type(value)'s MRO still finds the
// very object Dynamo's trace found (a method, property, class constant).
// Dynamo reads class attributes at trace time and, in torch 2.13, guards
// only type(value) by id; a method replaced or deleted on the class, or a
// base class gaining an override, then goes unnoticed. The comparison is a
// ClassAttrExpectation of type(value). What a function found there runs is
// FUNCTION_CODE_MATCH's (function_code_match.h): once per function per
// frame, not per object.
class CLASS_ATTR_MATCH : public LeafGuard {
 public:
  CLASS_ATTR_MATCH(py::object name, py::object expected, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "CLASS_ATTR_MATCH"; }
  // Pinned by the class's version tag (the class holds the expected object).
  void record(MemoRecorder& recorder, PyObject* value) override { recorder.type_tag(value); }

 private:
  ClassAttrExpectation expectation_;
};

// METACLASS_ATTR_MATCH: `value` is a class whose attribute `name` Python
// still finds on its metaclass: the metaclass keeps type's own attribute
// lookup (type_getattro: no __getattribute__ of its own), no class in
// value's own MRO defines `name`, and type(value)'s MRO lookup still finds
// the object the trace found there (a ClassAttrExpectation: identity, or
// an equal immutable constant).
//
// type.__getattribute__ consults the metaclass's MRO last, for a name that
// is not a data descriptor there and that the class's own MRO lacks.
// Dynamo's trace resolves such a read (`type(self).scale` with `scale`
// defined on the metaclass) to the metaclass's object and guards neither
// fact: assigning on the metaclass changes the metaclass, not the class,
// so nothing pinned by the class notices, and a class gaining `name` would
// take precedence unseen. (A data descriptor on the metaclass comes first
// in Python's order; it is another object, so the expectation fails.)
// Both halves are ClassVerdictCaches, one per type; the memo re-runs the
// leaf (two tag compares) instead of logging the class's own tag.
class METACLASS_ATTR_MATCH : public LeafGuard {
 public:
  METACLASS_ATTR_MATCH(py::object name, py::object expected, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "METACLASS_ATTR_MATCH"; }
  bool may_run_python() const override { return false; }

 private:
  py::str name_;
  ClassVerdictCache class_lacks_name_;
  ClassAttrExpectation on_metaclass_;
};

// CLASS_ATTR_SHADOWED: `value.name` is still answered by the instance
// __dict__ ahead of the class: the instance __dict__ holds `name`, and the
// class's lookup still consults it first (generic __getattribute__, no data
// descriptor `name` on the class or a base).
//
// Dynamo's trace looks `name` up on the class before the instance __dict__
// (to find data descriptors) and, when the class attribute is not one,
// takes the instance's value, which torch guards. What the class attribute
// is then does not matter, so the engine guards this fact instead of the
// class attribute's identity (CLASS_ATTR_MATCH): replacing a shadowed class
// default recompiles under neither engine, while a property added over the
// name (stock is stale there) or the instance attribute deleted fails here.
// Fast path: the class half is a ClassVerdictCache, the instance half one
// dict lookup; in a memo, the class's version tag and the instance
// __dict__'s version.
class CLASS_ATTR_SHADOWED : public LeafGuard {
 public:
  CLASS_ATTR_SHADOWED(py::object name, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "CLASS_ATTR_SHADOWED"; }
  void record(MemoRecorder& recorder, PyObject* value) override {
    recorder.type_tag(value);
    recorder.object_dict(value);
  }

 private:
  py::str name_;
  ClassVerdictCache cache_;
};

// GETATTR_FALLTHROUGH: `value.name` still falls through to
// type(value).__getattr__: no class in type(value)'s MRO defines `name` and
// the instance __dict__ does not hold it.
//
// When neither the class nor the instance answers, Dynamo traces the
// class's custom __getattr__ and, in torch 2.13, guards only what that
// function read; a class attribute or an instance attribute added later
// would make Python stop calling __getattr__, and the compiled code would
// keep its answer. (The __getattr__ function itself is guarded by its own
// source.) Fast path: the class half is a ClassVerdictCache, the instance
// half one dict lookup.
class GETATTR_FALLTHROUGH : public LeafGuard {
 public:
  GETATTR_FALLTHROUGH(py::object name, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "GETATTR_FALLTHROUGH"; }
  // Pinned by the class's version tag and the instance __dict__'s version.
  void record(MemoRecorder& recorder, PyObject* value) override {
    recorder.type_tag(value);
    recorder.object_dict(value);
  }

 private:
  py::str name_;
  ClassVerdictCache cache_;
};

// NN_MODULE_HOOKS_EMPTY: `module.name` (one of nn.Module's hook dicts,
// such as _forward_hooks) is still an empty dict.
//
// Dynamo traces past a module's hooks when they are empty and records that
// as a length guard on the hook dict (EMPTY_NN_MODULE_HOOKS_DICT, which
// stock torch 2.13 skips by default, so a hook registered after compiling
// never runs). The engine installs this one leaf on the module's own
// manager instead of a child manager, an accessor and a length leaf per hook
// dict: the same verdict with a third of the nodes to build. The attribute
// is read along Python's lookup order (a CachedAttrPlan), so a hook dict
// shadowed by a class property or replaced in the instance __dict__ is seen.
class NN_MODULE_HOOKS_EMPTY : public LeafGuard {
 public:
  NN_MODULE_HOOKS_EMPTY(py::object name, py::object parts, py::object stack);
  bool check(PyObject* value) override;
  const char* kind() const override { return "NN_MODULE_HOOKS_EMPTY"; }
  // Soundness of the memo: when the instance __dict__ answers (the class
  // pins that by its version tag, the __dict__ by its version), the hook
  // dict is a fixed object, and an unchanged version of it means it is
  // still empty. Any other path re-runs the guard.
  void record(MemoRecorder& recorder, PyObject* value) override;

 private:
  py::str name_;
  CachedAttrPlan plan_;
};

}  // namespace dynamo_guards
