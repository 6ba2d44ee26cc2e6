#include "torch/csrc/dynamo/root_guard_manager.h"

#include <algorithm>

#include "torch/csrc/dynamo/tensor_match.h"

namespace dynamo_guards {

namespace {

// Clears the values relational guards recorded, however the evaluation
// ends, so no frame value outlives the check that read it.
class RelationResetScope {
 public:
  explicit RelationResetScope(const std::vector<std::shared_ptr<RelationalState>>& relations)
      : relations_(relations) {}
  ~RelationResetScope() {
    for (const auto& r : relations_) {
      r->reset();
    }
  }
  RelationResetScope(const RelationResetScope&) = delete;
  RelationResetScope& operator=(const RelationResetScope&) = delete;

 private:
  const std::vector<std::shared_ptr<RelationalState>>& relations_;
};

}  // namespace

RootGuardManager::RootGuardManager() : GuardManager(this, "", py::dict()) {}

bool RootGuardManager::evaluate(PyObject* f_locals, CheckContext* ctx) {
  TensorLocalStateScope tensor_state;
  RelationResetScope reset(relations_);
  if (!GuardManager::check_subtree(f_locals, ctx)) {
    return false;
  }
  for (const LeafGuardPtr& guard : epilogue_) {
    if (!guard->run(f_locals, ctx)) {
      fail_count_++;
      return false;
    }
  }
  for (const auto& relation : relations_) {
    if (!relation->verify(ctx)) {
      fail_count_++;
      return false;
    }
  }
  return true;
}

GuardDebugInfo RootGuardManager::check_verbose(PyObject* f_locals) {
  CheckContext ctx;
  bool ok = evaluate(f_locals, &ctx);
  GuardDebugInfo info{ok, py::list(), ctx.num_guards_executed, py::none()};
  if (!ok) {
    if (ctx.verbose_code_parts) {
      info.verbose_code_parts = ctx.verbose_code_parts;
    }
    if (ctx.user_stack) {
      info.user_stack = ctx.user_stack;
    }
  }
  return info;
}

void RootGuardManager::register_relation(std::shared_ptr<RelationalState> state) {
  if (std::find(relations_.begin(), relations_.end(), state) == relations_.end()) {
    relations_.push_back(std::move(state));
  }
}

std::unique_ptr<RootGuardManager> RootGuardManager::clone_root(const py::object& keep) const {
  auto copy = std::make_unique<RootGuardManager>();
  copy->compile_id = compile_id;
  copy->build_local_state = build_local_state;
  copy->compile_on_one_rank = compile_on_one_rank;
  copy->epilogue_ = epilogue_;
  clone_contents_into(*copy, copy.get(), keep);
  return copy;
}

}  // namespace dynamo_guards
