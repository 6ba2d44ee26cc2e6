// The root of a guard tree: evaluated on a frame's locals (a dict), then
// the epilogue guards, then the relations between values.
#pragma once

#include "torch/csrc/dynamo/guard_manager.h"
#include "torch/csrc/dynamo/relational_guards.h"

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

 private:
  bool finalized_ = false;
  std::vector<LeafGuardPtr> epilogue_;
  std::vector<std::shared_ptr<RelationalState>> relations_;
};

}  // namespace dynamo_guards
