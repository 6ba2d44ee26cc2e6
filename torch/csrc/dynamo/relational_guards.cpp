#include "torch/csrc/dynamo/relational_guards.h"

#include <algorithm>

#include "torch/csrc/dynamo/subtree_memo.h"

namespace dynamo_guards {

RelationalState::RelationalState(size_t num_slots, CodeParts parts, py::object stack, Recording recording)
    : num_slots_(num_slots),
      heap_values_(num_slots > kInlineSlots ? num_slots : 0, nullptr),
      values_(num_slots > kInlineSlots ? heap_values_.data() : inline_values_),
      held_(recording == Recording::Held ? num_slots : 0),
      parts_(std::move(parts)),
      stack_(std::move(stack)) {}

RelationalState::~RelationalState() = default;

void RelationalState::drop_held() {
  for (OwnedRef& held : held_) {
    held = OwnedRef();
  }
  holding_ = false;
}

py::list RelationalState::describe_failure() {
  return parts_.as_list();
}

bool RelationalState::verify(CheckContext* ctx) {
  if (ctx != nullptr) {
    ctx->num_guards_executed++;
  }
  for (PyObject* value : values()) {
    if (value == nullptr) {
      // A participating manager was not reached: nothing to relate. The
      // tree itself decides the verdict in that case.
      return true;
    }
  }
  if (holds()) {
    return true;
  }
  if (ctx != nullptr) {
    ctx->record_failure(describe_failure(), stack_);
  }
  return false;
}

RelationalGuard::RelationalGuard(const RelationalState& state)
    : LeafGuard(state.code_parts(), state.user_stack()), kind_(state.kind()) {}

RelationalSlot::RelationalSlot(
    std::shared_ptr<RelationalState> state,
    size_t slot,
    std::shared_ptr<RelationalGuard> public_leaf)
    : LeafGuard(state->code_parts(), state->user_stack()),
      state_(std::move(state)),
      slot_(slot),
      public_leaf_(std::move(public_leaf)) {}

void RelationalSlot::record(MemoRecorder& recorder, PyObject* value) {
  if (PyObject** address = state_->address_slot(slot_)) {
    recorder.address_slot(address, value);
  } else {
    recorder.held_slot(this, *state_, slot_, value);
  }
}

bool NoTensorAliasing::same_as_last_distinct() const {
  return std::ranges::equal(last_distinct_, values());
}

bool NoTensorAliasing::holds() {
  if (same_as_last_distinct()) {
    return true;
  }
  sorted_.assign(values().begin(), values().end());
  std::sort(sorted_.begin(), sorted_.end());
  if (std::adjacent_find(sorted_.begin(), sorted_.end()) != sorted_.end()) {
    return false;
  }
  last_distinct_.assign(values().begin(), values().end());
  return true;
}

py::list NoTensorAliasing::describe_failure() {
  py::list parts;
  parts.append(py::str("Duplicate tensor found where not expected!"));
  return parts;
}

bool ObjectAliasing::holds() {
  return holds_by_identity(values());
}

bool ObjectAliasing::holds_by_identity(std::span<PyObject* const> values) const {
  return values.size() == 2 && values[0] == values[1];
}

StorageOverlapping::StorageOverlapping(size_t num_overlapping, size_t num_non_overlapping, CodeParts parts, py::object stack)
    : RelationalState(num_overlapping + num_non_overlapping, std::move(parts), std::move(stack)),
      num_overlapping_(num_overlapping) {
  predicate_ = py::module_::import("dynamo_guards._python_checks").attr("storage_overlapping")(num_overlapping_);
}

bool StorageOverlapping::holds() {
  py::list tensors;
  for (PyObject* value : values()) {
    tensors.append(py::handle(value));
  }
  return call_returned_true(PyObject_CallOneArg(predicate_.ptr(), tensors.ptr()));
}

SymbolicShapeGuard::SymbolicShapeGuard(
    size_t num_ints,
    size_t num_floats,
    uintptr_t fn,
    py::object keep_alive,
    CodeParts parts,
    py::object stack)
    : RelationalState(num_ints + num_floats, std::move(parts), std::move(stack)),
      num_ints_(num_ints),
      fn_(reinterpret_cast<GuardFn>(fn)),
      keep_alive_(std::move(keep_alive)),
      ints_(num_ints),
      floats_(num_floats) {
  if (fn_ == nullptr) {
    throw py::value_error("symbolic shape guard function pointer is null");
  }
}

bool SymbolicShapeGuard::holds() {
  for (size_t i = 0; i < num_slots_; ++i) {
    PyObject* v = values_[i];
    if (i < num_ints_) {
      if (!PyLong_Check(v)) {
        return false;
      }
      ints_[i] = PyLong_AsLongLong(v);
    } else {
      if (!PyFloat_Check(v) && !PyLong_Check(v)) {
        return false;
      }
      floats_[i - num_ints_] = PyFloat_AsDouble(v);
    }
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  return fn_(ints_.data(), floats_.data()) != 0;
}

}  // namespace dynamo_guards
