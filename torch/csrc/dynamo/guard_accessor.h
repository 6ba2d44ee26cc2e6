// An accessor reaches one child value from its parent's value and owns the
// manager that guards that child.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "torch/csrc/dynamo/check_context.h"
#include "torch/csrc/dynamo/subtree_memo.h"

namespace dynamo_guards {

namespace py = pybind11;

class GuardManager;

class GuardAccessor {
 public:
  // `key` identifies the accessor among its parent's accessors (an attribute
  // name, a dict key, an index; None for keyless ones).
  GuardAccessor(py::object key, std::unique_ptr<GuardManager> child);
  virtual ~GuardAccessor();
  GuardAccessor(const GuardAccessor&) = delete;
  GuardAccessor& operator=(const GuardAccessor&) = delete;

  // Returns a new reference to the child value, or nullptr (with a Python
  // error possibly set, which the caller discards) when it cannot be read.
  virtual PyObject* access(PyObject* parent) = 0;
  // The accessor's class name, as torch spells it.
  virtual const char* kind() const = 0;
  // "GetAttrGuardAccessor(training)"; cold.
  virtual std::string repr() const;
  // A new accessor of the same kind and key owning `child`.
  virtual std::unique_ptr<GuardAccessor> clone_with(std::unique_ptr<GuardManager> child) const = 0;

  // Cold: what a failed access() reports, in torch's words ("getattr failed
  // on source ...", "KeyError on ...").
  virtual std::string access_failure() const;
  // Whether a failed access() reports the text of the Python error it raised
  // instead (torch does so for the lambda accessor, whose callable is the
  // user's).
  virtual bool reports_raised_error() const { return false; }

  // For a SubtreeMemo: records what reading `child` from `parent` depended
  // on and returns true when that pins the read (dict contents, class
  // version tags, immutable tuples). Returns false, recording nothing, when
  // it does not; the log then re-runs this accessor and its subtree.
  virtual bool record(MemoRecorder& recorder, PyObject* parent, PyObject* child) { return false; }
  // For a SubtreeMemo, asked first: an accessor whose read of `parent`
  // returns a value fixed for parent's life (reads_value_fixed_by), with a
  // child subtree that decides by that value's contents alone
  // (GuardManager::decides_by_contents), logs one step proving that
  // `parent` is still the very object recorded (MemoRecorder::live_object)
  // and returns true; the subtree then logs nothing, since its verdict on
  // the same object's fixed value cannot change. False, logging nothing,
  // otherwise.
  bool record_fixed_read(MemoRecorder& recorder, PyObject* parent, PyObject* child);
  // Whether access() of `parent` returns, on every call, a value equal to
  // the last (of equal type, contents and length), however `parent` is
  // reached: an attribute computed from an immutable object.
  virtual bool reads_value_fixed_by(PyObject* parent) const { return false; }
  // For a SubtreeMemo, asked before record(): an accessor that reads a
  // pointer field of `parent`, whose child subtree decides by the child's
  // address alone (GuardManager::decides_by_identity), may log one step
  // comparing that field with `child` and return true; the subtree then
  // logs nothing. False, logging nothing, otherwise.
  virtual bool record_identity_read(MemoRecorder& recorder, PyObject* parent, PyObject* child) { return false; }
  // For a SubtreeMemo, asked when record() pins nothing: an accessor whose
  // read of `parent` is a pointer field of an exact builtin type (a
  // function's __defaults__, a cell's contents) or an item of an exact
  // tuple may log that read as a field or item step and hold the child
  // (MemoRecorder::held), whose subtree then records step by step instead
  // of being walked. Only a subtree that records on a held value without
  // running Python (GuardManager::records_on_held_value) is eligible.
  // False, logging nothing, otherwise.
  bool record_held_read(MemoRecorder& recorder, PyObject* parent, PyObject* child);
  // The child a held read of `parent` would find (borrowed), or nullptr
  // when this accessor has no such read of it; `parent_held`: `parent` is
  // itself a held value.
  PyObject* held_child(PyObject* parent, bool parent_held) const;

  // Reads the child value and evaluates its manager.
  bool check(PyObject* parent, CheckContext* ctx);

  bool matches(const char* kind, const py::object& key) const;
  const py::object& key() const { return key_; }
  GuardManager* child() const { return child_.get(); }
  // Starts loading the first cache line of the child manager (its vtable
  // and memo pointer, which check() reads first) so that a caller about to
  // run this accessor does not wait on it. A prefetch never faults and
  // changes no result.
  void prefetch_child() const { __builtin_prefetch(child_.get()); }

 protected:
  // The pointer field of `parent` that access() returns exactly (the child
  // itself, not None for an empty field), when `parent` is of an exact
  // builtin type whose layout fixes that field and whose attribute cannot
  // be shadowed or overridden; else nullptr.
  virtual PyObject* const* held_field(PyObject* parent) const { return nullptr; }
  // Whether `parent`'s exact type alone fixes where held_field lies, so
  // that the field may be read from a held parent (perhaps another object
  // at the recorded address, of the type a Type step checked). False where
  // the object decides too (the name fields only heap types have): such a
  // field is read only from a parent that is not held.
  virtual bool field_fixed_by_exact_type(PyObject* parent) const { return true; }
  // The item access() returns when `parent` is an exact tuple, as an index
  // within it; -1 otherwise.
  virtual Py_ssize_t held_tuple_index(PyObject* parent) const { return -1; }

  // Cold: str() of the pending Python error, which it clears; the
  // access_failure() text when there is none.
  std::string raised_error_text() const;

  py::object key_;
  std::unique_ptr<GuardManager> child_;
};

}  // namespace dynamo_guards
