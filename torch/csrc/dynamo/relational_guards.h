// Relational guards relate values reached by several managers of one tree
// (no two inputs alias, two sources are the same object, a set of tensors
// overlaps in storage exactly as at compile time, the symbolic shape
// relations hold). Each participating manager holds a RelationalSlot leaf
// that records its value during an evaluation; the root verifies every
// relation once the tree has passed and then clears the recorded values.
//
// Python sees torch's shape of it: every manager of a relation shows the
// same RelationalGuard leaf (OBJECT_ALIASING, NO_TENSOR_ALIASING,
// SYMBOLIC_SHAPE_GUARD; STORAGE_OVERLAPPING has one for the overlapping
// managers and one for the others), which is each slot's public face.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "torch/csrc/dynamo/leaf_guard.h"
#include "torch/csrc/dynamo/py_ref.h"

namespace dynamo_guards {

class RelationalState {
 public:
  // How a relation keeps what its slots recorded until it is verified.
  enum class Recording {
    // A strong reference per slot: holds() reads the objects.
    Held,
    // The address alone, borrowed: holds() compares addresses and never
    // reads an object (the state's class states why that is sound).
    Address,
  };
  RelationalState(size_t num_slots, CodeParts parts, py::object stack, Recording recording = Recording::Held);
  virtual ~RelationalState();
  // values_ may point into the object itself.
  RelationalState(const RelationalState&) = delete;
  RelationalState& operator=(const RelationalState&) = delete;
  virtual const char* kind() const = 0;
  // Checks the relation over the recorded values; all slots are filled when
  // the tree passed.
  bool verify(CheckContext* ctx);
  void record(size_t slot, PyObject* value) {
    values_[slot] = value;
    if (!held_.empty()) {
      held_[slot] = OwnedRef::from_borrowed(value);
      holding_ = true;
    }
  }
  // Clears what the slots recorded and drops the references taken.
  void reset() {
    std::fill(values_, values_ + num_slots_, nullptr);
    if (holding_) {
      drop_held();
    }
  }
  // Where slot `slot` keeps its address under Recording::Address (a memo
  // log stores into it directly; valid while this state lives); nullptr
  // under Recording::Held.
  PyObject** address_slot(size_t slot) { return held_.empty() ? &values_[slot] : nullptr; }
  size_t num_slots() const { return num_slots_; }
  // Whether the relation's verdict on `values` (one per slot, in slot
  // order) depends on nothing but which objects they are, and holds. A memo
  // log that records every slot of such a relation, while the slots' held
  // references kept the values alive (so equal addresses were one object),
  // proves on every validation that each slot reads the very object it
  // recorded; the relation then holds again, and the log stores the
  // addresses (where_recorded) with no reference taken: what the
  // references guard against, a value freed and its address reused
  // between two slots, cannot make two slots that each read their recorded
  // object look alike. False unless a relation says so.
  virtual bool holds_by_identity(std::span<PyObject* const> /*values*/) const { return false; }
  // Where slot `slot` keeps what it recorded in this evaluation (valid
  // while this state lives): a memo log pinning the relation stores the
  // slot's address there (holds_by_identity).
  PyObject** where_recorded(size_t slot) { return &values_[slot]; }
  const CodeParts& code_parts() const { return parts_; }
  const py::object& user_stack() const { return stack_; }

 protected:
  virtual bool holds() = 0;
  // The failure text; defaults to the code parts.
  virtual py::list describe_failure();
  std::span<PyObject* const> values() const { return {values_, num_slots_}; }

  // What each slot recorded in this evaluation (nullptr: not reached);
  // borrowed, kept alive by held_ under Recording::Held. A relation of
  // up to kInlineSlots slots (an OBJECT_ALIASING pair) keeps them in the
  // object itself: the root resets and verifies every relation on every
  // check, and a separate buffer was one more cache line each (a decode
  // step has 28 relations).
  static constexpr size_t kInlineSlots = 2;
  size_t num_slots_;
  PyObject* inline_values_[kInlineSlots] = {};
  std::vector<PyObject*> heap_values_;  // more slots than that
  PyObject** values_;                   // inline_values_ or heap_values_'s data
  bool holding_ = false;                // some held_ entry is set
  std::vector<OwnedRef> held_;          // empty under Recording::Address
  CodeParts parts_;
  py::object stack_;

 private:
  void drop_held();
};

// The leaf Python sees on the managers of one relation (or one group of
// it). It is never part of a tree: the slots record, the root verifies.
class RelationalGuard : public LeafGuard {
 public:
  explicit RelationalGuard(const RelationalState& state);
  // Python cannot evaluate a relation on one value; the bindings refuse the
  // call, so this is never reached.
  bool check(PyObject* /*value*/) override { return true; }
  const char* kind() const override { return kind_; }

 private:
  const char* kind_;  // a string literal of the state's class
};

// One class per relation kind, so that Python sees torch's class names.
#define DYNAMO_GUARDS_RELATIONAL_LEAF(NAME)                                  \
  class NAME : public RelationalGuard {                                      \
   public:                                                                   \
    explicit NAME(const RelationalState& state) : RelationalGuard(state) {} \
  }
DYNAMO_GUARDS_RELATIONAL_LEAF(NO_TENSOR_ALIASING);
DYNAMO_GUARDS_RELATIONAL_LEAF(OBJECT_ALIASING);
DYNAMO_GUARDS_RELATIONAL_LEAF(STORAGE_OVERLAPPING);
DYNAMO_GUARDS_RELATIONAL_LEAF(SYMBOLIC_SHAPE_GUARD);
#undef DYNAMO_GUARDS_RELATIONAL_LEAF

// The leaf a participating manager holds: records the value, never fails.
class RelationalSlot : public LeafGuard {
 public:
  RelationalSlot(std::shared_ptr<RelationalState> state, size_t slot, std::shared_ptr<RelationalGuard> public_leaf);
  bool check(PyObject* value) override {
    state_->record(slot_, value);
    return true;
  }
  const char* kind() const override { return state_->kind(); }
  bool may_run_python() const override { return false; }  // stores a pointer
  // In a memo log: a SlotAddress step where the state records addresses
  // only, else a Leaf step (a SlotAddress step too where the log pins the
  // whole relation: MemoRecorder::held_slot).
  void record(MemoRecorder& recorder, PyObject* value) override;
  const std::shared_ptr<RelationalState>& state() const { return state_; }
  // What get_leaf_guards() shows in this slot's place.
  const std::shared_ptr<RelationalGuard>& public_leaf() const { return public_leaf_; }

 private:
  std::shared_ptr<RelationalState> state_;
  size_t slot_;
  std::shared_ptr<RelationalGuard> public_leaf_;
};

// No two slots hold the same object. Recorded by address only, with no
// reference taken (the per-slot incref and the decref at the end of every
// check were a visible share of a decode step's check, 97 slots): the
// verdict compares addresses and reads no object. Sound without the
// references: an object has one address while it lives, so two slots
// holding one object always show equal addresses and fail. What the
// references would have prevented is only the converse: a value recorded
// in one slot dying before the verdict (a Python guard later in the check
// dropping its last reference) and another object taking its address in a
// later slot. Those addresses repeat and the relation fails (a recompile)
// though the objects were distinct; it never passes where torch's would
// fail.
class NoTensorAliasing : public RelationalState {
 public:
  NoTensorAliasing(size_t num_slots, CodeParts parts, py::object stack)
      : RelationalState(num_slots, std::move(parts), std::move(stack), Recording::Address) {}
  const char* kind() const override { return "NO_TENSOR_ALIASING"; }

 protected:
  bool holds() override;
  py::list describe_failure() override;

 private:
  // Whether the slots hold, in order, the addresses of the last values
  // found distinct. The verdict is a function of the addresses alone, so
  // those are distinct again, with no sort (the common case: the same
  // parameters and inputs on every call). Compared, never dereferenced.
  bool same_as_last_distinct() const;
  std::vector<PyObject*> last_distinct_;
  std::vector<PyObject*> sorted_;  // scratch, kept for its capacity
};

class ObjectAliasing : public RelationalState {
 public:
  using RelationalState::RelationalState;
  const char* kind() const override { return "OBJECT_ALIASING"; }
  // `x is y`: a verdict of identities alone.
  bool holds_by_identity(std::span<PyObject* const> values) const override;

 protected:
  bool holds() override;
};

// Storage overlap is decided by torch's own compute_overlapping_tensors
// (a Python callable): the "python" row of the coverage table.
class StorageOverlapping : public RelationalState {
 public:
  StorageOverlapping(size_t num_overlapping, size_t num_non_overlapping, CodeParts parts, py::object stack);
  const char* kind() const override { return "STORAGE_OVERLAPPING"; }

 protected:
  bool holds() override;

 private:
  size_t num_overlapping_;
  py::object predicate_;
};

// The shape-environment guards compiled to a C function by inductor:
// int8_t guard(int64_t* ints, double* floats). The first num_ints slots are
// ints, the rest floats.
class SymbolicShapeGuard : public RelationalState {
 public:
  using GuardFn = int8_t (*)(int64_t*, double*);
  SymbolicShapeGuard(size_t num_ints, size_t num_floats, uintptr_t fn, py::object keep_alive, CodeParts parts, py::object stack);
  const char* kind() const override { return "SYMBOLIC_SHAPE_GUARD"; }

 protected:
  bool holds() override;

 private:
  size_t num_ints_;
  GuardFn fn_;
  py::object keep_alive_;  // the loaded library that owns fn_
  std::vector<int64_t> ints_;
  std::vector<double> floats_;
};

}  // namespace dynamo_guards
