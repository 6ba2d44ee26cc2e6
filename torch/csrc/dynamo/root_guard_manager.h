// The root of a guard tree: evaluated on a frame's locals (a dict), then
// the epilogue guards, then the relations between values.
#pragma once

#include "torch/csrc/dynamo/guard_manager.h"
#include "torch/csrc/dynamo/relational_guards.h"
#include "torch/csrc/dynamo/tensor_expectation.h"

namespace dynamo_guards {

struct GuardDebugInfo {
  bool result;
  py::list verbose_code_parts;
  int64_t num_guards_executed;
  py::object user_stack;
};

class RootGuardManager : public GuardManager {
 public:
  RootGuardManager();

  // The one evaluation path; ctx == nullptr is the fast check.
  bool evaluate(PyObject* f_locals, CheckContext* ctx);
  bool check_fast(PyObject* f_locals) { return evaluate(f_locals, nullptr); }
  GuardDebugInfo check_verbose(PyObject* f_locals);

  void add_epilogue_guard(LeafGuardPtr guard) { epilogue_.push_back(std::move(guard)); }
  const std::vector<LeafGuardPtr>& epilogue_guards() const { return epilogue_; }
  // Verifies `state` after the tree passed; registering it again is a no-op.
  void register_relation(std::shared_ptr<RelationalState> state);

  std::unique_ptr<RootGuardManager> clone_root(const py::object& keep) const;

  // Called once the builder is done: chooses the memoized subtrees. A guard
  // or child added afterwards finalizes again, dropping every log (a log
  // recorded before the addition would skip the new guard).
  void finalize() {
    place_memos();
    finalized_ = true;
  }
  void tree_changed() {
    if (finalized_) {
      place_memos();
    }
  }

  std::string compile_id;
  // The dispatch-key state TENSOR_MATCH guards built on this tree apply to
  // the tensor's keys: the thread's state when the root was made (a build
  // runs on one thread, under one state), or the one set_local_state gave
  // (torch 2.14: a loaded package's saved state).
  TensorLocalState build_local_state = TensorLocalState::capture();
  // torch 2.15: the frame was compiled on one rank (TENSOR_MATCH guards
  // then come with device_index_is_current); kept for introspection.
  bool compile_on_one_rank = false;

 private:
  bool finalized_ = false;
  std::vector<LeafGuardPtr> epilogue_;
  std::vector<std::shared_ptr<RelationalState>> relations_;
};

}  // namespace dynamo_guards
