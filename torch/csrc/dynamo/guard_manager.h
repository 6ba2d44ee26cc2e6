// A guard manager is one node of the guard tree: the leaf guards on its value
// and the accessors that reach child values, each owning a child manager.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "torch/csrc/dynamo/guard_accessor.h"
#include "torch/csrc/dynamo/leaf_guard.h"
#include "torch/csrc/dynamo/subtree_memo.h"

namespace dynamo_guards {

namespace py = pybind11;

class RootGuardManager;

// The builder's GuardManagerType: which manager guards a child value. As in
// torch, only a dict (or subclass) example value reads the enum (which must
// then be a GuardManagerType or its int value); any other value gets a
// plain manager.
enum class ManagerKind { Plain = 1, Dict = 2 };
ManagerKind manager_kind_for(const py::object& guard_manager_enum, py::handle example_value);

class GuardManager {
 public:
  GuardManager(RootGuardManager* root, std::string source, py::handle example_value);
  virtual ~GuardManager();
  GuardManager(const GuardManager&) = delete;
  GuardManager& operator=(const GuardManager&) = delete;

  // Evaluates this subtree on `value` (borrowed). On the fast path
  // (ctx == nullptr) a memoized subtree is validated from its log.
  bool check(PyObject* value, CheckContext* ctx) {
    if (memo_ != nullptr && ctx == nullptr) {
      return memo_->evaluate(*this, value);
    }
    return check_subtree(value, ctx);
  }

  // The walk itself: leaves first, then children in order.
  virtual bool check_subtree(PyObject* value, CheckContext* ctx);

  // Puts a SubtreeMemo on every subtree below this node that is large
  // enough to be worth it; called once the tree is complete. A memo that is
  // validating never consults the memos below it; they serve when it is
  // disabled and in its Walk steps.
  struct MemoPlan {
    size_t nodes;  // managers and leaf guards in the subtree
  };
  virtual MemoPlan place_memos();
  // Subtrees smaller than this are walked: a log would not be shorter.
  static constexpr size_t kMinMemoNodes = 4;
  const SubtreeMemo* memo() const { return memo_.get(); }
  // Gives this node a memo when `plan` (its own place_memos result) says
  // the subtree is large enough; called by the parent.
  void memoize_if_worthwhile(const MemoPlan& plan) {
    if (plan.nodes >= kMinMemoNodes) {
      memo_ = std::make_unique<SubtreeMemo>();
    }
  }

  void add_leaf_guard(LeafGuardPtr guard);

  // The child manager behind accessor `Accessor` with this key, created on
  // first request: asking twice for the same attribute returns one node.
  template <typename Accessor, typename... Extra>
  GuardManager* child_manager(
      py::object key,
      std::string source,
      py::handle example_value,
      const py::object& guard_manager_enum,
      Extra&&... extra) {
    for (const auto& acc : accessors_) {
      if (acc->matches(Accessor::kKind, key)) {
        return acc->child();
      }
    }
    std::unique_ptr<GuardManager> child =
        make_child(manager_kind_for(guard_manager_enum, example_value), std::move(source), example_value);
    accessors_.push_back(std::make_unique<Accessor>(std::move(key), std::move(child), std::forward<Extra>(extra)...));
    notify_tree_changed();
    return accessors_.back()->child();
  }

  // Deep copy of the subtree whose managers `keep(manager)` accepts; leaves
  // (relational slots among them) are shared with the original.
  std::unique_ptr<GuardManager> clone(RootGuardManager* root, const py::object& keep) const;

  const std::string& source() const { return source_; }
  // type(example_value), or None once that type has died.
  py::object type_of_guarded_value() const;
  int64_t fail_count() const { return fail_count_; }
  bool is_guarded_value_immutable() const { return immutable_; }
  const std::vector<LeafGuardPtr>& leaf_guards() const { return leaves_; }
  const std::vector<std::unique_ptr<GuardAccessor>>& accessors() const { return accessors_; }
  bool has_relational_guard() const;
  // No accessors, and only leaves whose verdict compares the value's
  // address (LeafGuard::decides_by_identity): the subtree passes for
  // exactly the addresses it passed for, whatever object sits there.
  bool decides_by_identity() const;
  // Whether this subtree, on `value`, records only steps that are sound on
  // a held value (MemoRecorder::held): no dict manager, only leaves that
  // record so (LeafGuard::records_on_held_value), and only accessors with
  // a held read of `value` whose subtrees do the same, or with a read of a
  // value fixed by `value` whose subtree decides by contents
  // (GuardAccessor::record_fixed_read). Reads fields and tuple items of
  // `value` and below, and those fixed values (through builtin getters),
  // runs no Python code.
  bool records_on_held_value(PyObject* value) const;
  // No accessors, no dict manager, and only leaves that decide on `value`
  // by what it is (its type, its immutable contents, its own length: what
  // LeafGuard::records_on_held_value accepts), not by its address
  // (LeafGuard::decides_by_identity): the subtree passes on every value of
  // `value`'s type and contents.
  bool decides_by_contents(PyObject* value) const;
  RootGuardManager* root() const { return root_; }
  size_t depth() const { return depth_; }
  // Managers alive in the process, for the lifetime tests.
  static size_t live_count() { return live_.load(std::memory_order_relaxed); }

  // Every walk of the tree (check, verbose check, memo recording, clone,
  // destruction) recurses once per level on the C stack. Dynamo's sources
  // nest a few dozen levels; a builder that goes past this limit gets a
  // RecursionError instead of a stack overflow during a later check.
  static constexpr size_t kMaxTreeDepth = 2000;

 protected:
  // The leaf guards, in order; counts a failure.
  bool check_leaves(PyObject* value, CheckContext* ctx);
  // Tells the root a node was added (defined where RootGuardManager is).
  void notify_tree_changed();
  // Evaluates the accessors in order; on a failure, counts it and reorders
  // them by fail count (most failing first).
  bool check_accessors(PyObject* value, CheckContext* ctx);
  std::unique_ptr<GuardManager> make_child(ManagerKind kind, std::string source, py::handle example_value);
  virtual std::unique_ptr<GuardManager> clone_node(RootGuardManager* root) const;
  void clone_contents_into(GuardManager& copy, RootGuardManager* root, const py::object& keep) const;

  // What a passing check reads comes first, right after the vtable pointer:
  // a memoized node's check reads only the vtable and memo_, which share one
  // cache line (the object is 16-byte aligned), and a walked node's the
  // next two vectors' bounds too. A check in situ finds most nodes cold.
  std::unique_ptr<SubtreeMemo> memo_;  // null unless place_memos chose this node
  std::vector<LeafGuardPtr> leaves_;
  std::vector<std::unique_ptr<GuardAccessor>> accessors_;
  RootGuardManager* root_;  // not owned; outlives every node of its tree
  std::string source_;
  py::object guarded_type_;  // a weakref to type(example_value)
  bool immutable_;
  int64_t fail_count_ = 0;
  size_t depth_ = 0;  // the root is at 0

 public:
  // Flags the builder's tag-safety pass sets; kept for introspection.
  bool tag_safe = false;
  bool tag_safe_root = false;

 private:
  static std::atomic<size_t> live_;
};

// True for values that cannot be mutated in place (None, bool, int, float,
// complex, str, bytes, tensors by torch's convention, tuples/frozensets of
// such).
bool is_immutable_value(py::handle value);

}  // namespace dynamo_guards
