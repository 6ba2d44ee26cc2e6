// SubtreeMemo: a guard subtree that passed is re-validated from a flat log of
// what it read, instead of being walked again. Parts whose reads cannot be
// pinned are re-run from the log (Leaf and Walk steps), so every subtree can
// be memoized; the log is a cache of the walk, never a second verdict.
//
// While a subtree is checked in full, every accessor and leaf records what
// its verdict depended on (MemoRecorder). Reads through dicts become version
// checks: CPython 3.11 draws a dict's version tag from one process-wide
// counter on every creation and every modification, so an equal version
// means the very same contents, and the objects stored in the dict are the
// same, alive objects. Class-level decisions become type version-tag checks
// (see attribute_resolution.h), a value's type a pointer comparison. What
// can change without any dict or type changing (tensor metadata, a relation
// between inputs, whatever a Python guard computes) is re-checked by running
// the leaf again (a Leaf step). A read that nothing pins (getattr through a
// descriptor or custom getattr, a fresh object per read) is re-run with its
// whole subtree (a Walk step), exactly as the walk would run it. One read
// that nothing pins needs no walk: a pointer field of a validated object
// whose child subtree decides by the child's address alone (ID_MATCH
// leaves, no accessors) is a FieldIdentity step that compares the field
// with that address, which is all the subtree would compare; an item of a
// tuple under such a subtree is a TupleItem step, the same compare of the
// tuple's slot. The child is not anchored: the object now at that address
// may be another one (the recorded one died, its address was reused), so
// nothing else in the log may lean on its identity. Such a child whose
// subtree goes on reading fields and tuple items and runs only leaf guards
// that run no Python (a function's __defaults__ and their values, a
// closure's cells and the functions in them) is held rather than walked:
// its subtree records as field, item, type and leaf steps that re-read
// everything the walk reads (MemoRecorder::held says why that is sound).
//
// Watched dicts and types (CPython 3.12 and later, watchers.h): while the
// log is recorded, every dict and type it would check by version is
// watched instead, and its step leaves the log (a dict's version check
// disappears; a type's tag check becomes a type check; an object's __dict__
// slot is still compared, because replacing an object's __dict__ changes
// no dict). The log then holds one WatchSet, and validates only while no
// event touched anything in it: one flag read at the start, and again
// after every step that can run Python code. A dict or type that cannot be
// watched (no watcher id, a dict whose writes 3.13.0 does not report) keeps
// its version step, as on 3.11.
//
// Safety of the log: a pointer in it is only dereferenced when it is reached
// through objects already validated in log order (the memo's own value is
// live; a value stored in a validated dict is alive because the dict holds
// it). Pointers of objects that may have died are only compared, never read.
#pragma once

#include <Python.h>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "torch/csrc/dynamo/attribute_resolution.h"
#include "torch/csrc/dynamo/py_ref.h"
#include "torch/csrc/dynamo/python_compat.h"
#include "torch/csrc/dynamo/tensor_expectation.h"
#include "torch/csrc/dynamo/watchers.h"

namespace dynamo_guards {

class GuardAccessor;
class GuardManager;
class LeafGuard;
class RelationalState;
class TENSOR_MATCH;

// One validation step, 32 bytes: two per cache line. The meaning of `a`,
// `b` and `c` depends on the kind.
struct MemoStep {
  enum class Kind : uint8_t {
    ObjectDict,  // a: the object's __dict__ slot (PyObject**), b: that dict (maybe null), c: its version
    Dict,        // a: a live dict, c: its version
    Type,        // a: the object, b: its type
    TypeTag,     // a: the object, b: its type, c: the type's version tag
    Leaf,        // a: the object, b: the LeafGuard to run on it, c: 1 if it may run Python code
    // a: the tensor, b: its TENSOR_MATCH, c: its TensorImpl's address
    // (prefetched only), tag: its TensorRecord. Where the log checks the
    // tensor's __dict__ slot right after (and stores it in a relation
    // slot), those steps are fused into this one: slot_offset is not 0 and
    // the record says what they compared (TensorRecord, fuse_tensor_steps).
    Tensor,
    Walk,        // a: the parent, b: the GuardAccessor to run (with its whole subtree), c: its child manager (prefetched only)
    DictRun,     // consecutive Dict steps: a: the first dict, b: how many, c: index of the first DictCheck
    // A TypeTag step and the ObjectDict step of the same object, fused: a:
    // the object, b: its type, tag: the type's version tag, slot_offset:
    // where its __dict__ slot is, c: the dict in that slot (maybe null;
    // its version is the next step, a Dict, unless the dict is watched).
    TaggedObjectDict,
    // The steps whose dict or type the log's WatchSet watches (3.12+):
    ObjectDictSlot,   // an ObjectDict whose dict is watched: a: the slot, b: the dict
    // A pointer field of a validated object that must still hold the object
    // at address b (MemoRecorder::field_identity): a: the field.
    FieldIdentity,
    TypedObjectDict,  // a TaggedObjectDict whose type is watched: no tag compared
    // Item c of the reachable list a is still the very object b: the slot
    // holds b's address and the log's weak reference number `tag` to the
    // recorded item is alive and names b (MemoRecorder::list_item).
    ListItem,
    // A relation slot that records addresses only, or one of a relation the
    // log pins whole: a: the object, b: where the relation keeps its
    // address (PyObject**; RelationalState::address_slot, where_recorded).
    // Stores, never fails (MemoRecorder::address_slot, held_slot).
    SlotAddress,
    // Item c of the reachable exact tuple a is at address b: the tuple is
    // longer than c and that slot holds b (MemoRecorder::tuple_item). Only
    // the address is compared, as in FieldIdentity.
    TupleItem,
    // The reachable object a is still the very object recorded: b, the
    // log's weak reference to it, names a (MemoRecorder::live_object). a
    // is never dereferenced.
    LiveObject,
    // The reachable class a still has the valid version tag c, which pins
    // its MRO's dicts (MemoRecorder::type_state, where no watch is set).
    ClassTag,
  };
  MemoStep(Kind k, void* a_, void* b_, uint64_t c_) : kind(k), a(a_), b(b_), c(c_) {}

  Kind kind;
  int16_t slot_offset = 0;  // TaggedObjectDict, TypedObjectDict, and a Tensor step with its __dict__ slot fused
  uint32_t tag = 0;         // TaggedObjectDict: the type's version tag; Tensor: the TensorRecord's index
  void* a;
  void* b;
  uint64_t c;
};
static_assert(sizeof(MemoStep) == 32, "two steps per cache line");

// One dict of a DictRun, checked in a tight loop apart from the steps.
struct DictCheck {
  PyObject* dict;
  uint64_t version;
};

// What a Tensor step compares and prefetches, kept in log order beside the
// steps: validation reads these in sequence instead of each guard object.
struct TensorRecord {
  TensorExpectation expected;  // the guard's, when all_static; else the guard checks
  const void* autograd_meta;   // where the tensor's autograd metadata was: prefetched, never read
  // The steps fused into the Tensor step (SubtreeMemo::fuse_tensor_steps),
  // checked after the tensor matched, in the order they were logged:
  // - its step's slot_offset is not 0: the __dict__ slot there must hold
  //   `object_dict` (maybe null), and, when `type_tag` is not 0, the type
  //   must still have that version tag (a TaggedObjectDict; a
  //   TypedObjectDict's type is watched). No type compare: the tensor
  //   check has just compared the type with the same one. With
  //   `checks_dict_version`, that dict's version must still be
  //   `dict_version` (the Dict step a TaggedObjectDict's unwatched dict
  //   takes).
  // - `alias_slot` is not null: the tensor's address is stored there (a
  //   SlotAddress step).
  PyObject* object_dict = nullptr;
  PyObject** alias_slot = nullptr;
  uint64_t dict_version = 0;
  uint32_t type_tag = 0;
  bool checks_dict_version = false;
};

// Starts loading what a Tensor step reads besides the tensor object: the
// TensorImpl fields its check compares (keys, dtype, device, sizes,
// strides) and the autograd metadata's vtable and requires_grad flag, at
// the addresses recorded with the log. They are almost always still the
// tensor's; a prefetch never faults and changes no result.
inline void prefetch_tensor_metadata(const void* tensor_impl, const TensorRecord& record) {
  const char* impl = static_cast<const char*>(tensor_impl);
  const TensorMetadataLayout& layout = kTensorMetadataLayout;
  for (unsigned off = layout.impl_begin; off < layout.impl_end; off += 64) {
    __builtin_prefetch(impl + off);
  }
  __builtin_prefetch(impl + layout.impl_end - 1);
  if (const char* autograd_meta = static_cast<const char*>(record.autograd_meta)) {
    __builtin_prefetch(autograd_meta);
    __builtin_prefetch(autograd_meta + layout.requires_grad);
  }
}

// A Tensor step's whole check: whether `tensor` still matches `record`
// (the record of `guard`), under the dispatch state `state`.
bool tensor_record_matches(
    const TensorRecord& record,
    const TENSOR_MATCH* guard,
    PyObject* tensor,
    const TensorLocalState& state);

// The kind's name, for introspection.
const char* memo_step_kind_name(MemoStep::Kind kind);

class MemoRecorder {
 public:
  // `watches` (may be null: nothing is watched) receives the dicts and
  // types the log pins by watching rather than by version.
  MemoRecorder(PyObject* memo_value, WatchSet* watches) : memo_value_(memo_value), watches_(watches) {}

  // Values read out of a validated dict (or an immutable tuple of one) are
  // the same objects whenever the log validates.
  void anchor(PyObject* value) { anchored_.insert(value); }
  bool anchored(PyObject* value) const { return anchored_.count(value) != 0; }

  // Whether validation may dereference `obj`: the memo's own value, a
  // value anchored by a validated dict, or a held value (below). Recording
  // anything else aborts.
  bool reachable(PyObject* obj) {
    if (obj == memo_value_ || anchored(obj) || held(obj)) {
      return true;
    }
    abort();
    return false;
  }

  // Held values: a child read from a pointer field of a reachable object
  // (or an item of a reachable tuple) whose subtree is recorded step by step
  // rather than walked (GuardAccessor::record_held_read). The log proves
  // only that the field still holds an object at the recorded address, so
  // a held value is alive (the field holds a reference) but may be another
  // object than the one recorded (the recorded one freed and its address
  // reused). Hence:
  // - Steps on a held value dereference it only as far as a type step has
  //   checked its layout first (type() always logs one for a held value),
  //   and compare only what the walk would compare: fields by address, leaf
  //   guards that run no Python on it. Nothing read through a held value is
  //   anchored, and no version, tag or dict read through one is recorded
  //   (those steps abort).
  // - It is alive only while its holder keeps it, and Python code can make
  //   the holder drop it. So no step that may run Python code may follow
  //   while any value is held (walk() and leaf() abort), and a value is held
  //   only from its proof step to the end of its subtree's steps
  //   (HeldValue releases it).
  bool holding() const { return !held_.empty(); }
  bool held(PyObject* obj) const { return held_.count(obj) != 0 && obj != memo_value_ && !anchored(obj); }
  // Logs that the pointer field `field` of the reachable `holder` (of a
  // fixed layout: its type is checked first) still holds `value`, and holds
  // `value` until released. False, with nothing logged, when `holder` is
  // not reachable or `field` does not hold `value`.
  bool held_field(PyObject* holder, PyObject* const* field, PyObject* value);
  // As tuple_item(), then holds `item` until released.
  bool held_tuple_item(PyObject* tuple, Py_ssize_t index, PyObject* item);
  void release_held(PyObject* value);

  // The log re-runs `accessor` (and its subtree) on the reachable `parent`.
  void walk(GuardAccessor* accessor, PyObject* parent);

  void object_dict(PyObject* obj);
  void dict(PyObject* d);
  void type(PyObject* obj);
  void type_tag(PyObject* obj);
  // Logs that `field`, a pointer field at a fixed offset inside `holder`
  // (whose layout its type fixes), still holds the object at `value`'s
  // address. Only an address is compared: the caller vouches that nothing
  // the log skips depends on more than that address. False, with nothing
  // logged, when `holder` is not reachable.
  bool field_identity(PyObject* holder, PyObject* const* field, PyObject* value);
  // Pins the reachable `obj`'s type by its version tag or a watch
  // (type_tag) and anchors that type: a tag is never given to another type
  // and a watched type's death is an event, so the log validates only while
  // type(obj) is the very type recorded, and while that type is unmodified.
  // False when the recording aborts instead (no tag).
  bool type_of(PyObject* obj);
  // Whether type_of() or type_state() pinned `type`'s own tag: what
  // changes only together with that tag (the MRO) is then pinned too.
  bool type_state_pinned(PyObject* type) const { return pinned_types_.count(type) != 0; }
  // Pins the state of the reachable class `type` itself (its MRO's dicts,
  // its slots, its name), as type_of() pins an object's class: with no
  // step when type_of() pinned it already or a watch on it is set (3.12
  // on), else (3.11) by a ClassTag step comparing its own version tag,
  // which CPython invalidates on every change to the class or a base and
  // never gives another class. False when the class has no valid tag.
  bool type_state(PyObject* type);
  // Pins `item`, read as item `index` of the reachable exact list `list`,
  // by identity, and anchors it. A list signals no change, so the step
  // reads the slot again, and proves the object there is the one recorded
  // (not another one at a reused address) by a weak reference to it, made
  // here: a weak reference is alive and names an address only while that
  // very object lives. While validating, the log holds a strong reference
  // to each item so proven, so Python code a later step runs cannot free
  // it under the steps below it. False, with nothing logged, when the item
  // takes no weak references or `list` is not reachable.
  bool list_item(PyObject* list, Py_ssize_t index, PyObject* item);
  // Logs that item `index` (not negative) of the reachable exact tuple
  // `tuple` is still at `item`'s address, for a read whose child subtree
  // decides by that address alone (GuardManager::decides_by_identity). The
  // memo's own value is matched by address only, so the tuple there may be
  // another one, even a shorter one: the step pins the type first (a Type
  // step) and compares the length before it reads the slot; what it then
  // compares is what the walk would (the same slot, the child's address).
  // The item is not anchored. False, with nothing logged, when `tuple` is
  // no exact tuple holding `item` at `index` or is not reachable.
  bool tuple_item(PyObject* tuple, Py_ssize_t index, PyObject* item);
  // Logs that the reachable `obj` is still the very object recorded, for a
  // read of a value fixed for obj's life whose subtree is then skipped
  // (GuardAccessor::record_fixed_read). The step compares `obj`'s address
  // with the referent of a weak reference made here, owned by the log: a
  // weak reference names an object only while that very object lives (it
  // is cleared before the object is freed), so a new object at a reused
  // address does not pass. Nothing is anchored and `obj` is never
  // dereferenced, so it may be a held value. False, with nothing logged,
  // when `obj` takes no weak references.
  bool live_object(PyObject* obj);
  // The _parameters, _buffers and _modules dicts of an nn.Module.
  void module_dicts(PyObject* module);
  // What a lookup along `path` on `obj` reads besides the class: the class
  // tag (which pins the plan) and the instance __dict__, plus the module
  // dicts for ModuleDicts. False, with nothing logged, when the path reads
  // what no version pins (getattr, a dict subclass's own lookup).
  bool instance_lookup(PyObject* obj, AttrPath path);
  void leaf(LeafGuard* guard, PyObject* value);
  // A Leaf step for a guard that may run Python in general but not on
  // `value`, whose type a step just before has pinned (the caller vouches
  // for both).
  void python_free_leaf(LeafGuard* guard, PyObject* value);
  // A relation slot's record of `value` (a leaf that stores and never
  // fails), as a store into `address` instead of a call of the leaf.
  void address_slot(PyObject** address, PyObject* value);
  // Slot `slot` of `state`, a relation whose slots keep references, records
  // `value` through `slot_leaf` (a Leaf step). When this log records every
  // slot of that relation and it holds by identity over what they recorded
  // (RelationalState::holds_by_identity states why that suffices),
  // take_steps() makes those steps SlotAddress steps.
  void held_slot(LeafGuard* slot_leaf, RelationalState& state, size_t slot, PyObject* value);
  void tensor(TENSOR_MATCH* guard, PyObject* value, const void* impl, const void* autograd_meta);
  void abort() { aborted_ = true; }

  bool aborted() const { return aborted_; }
  std::vector<MemoStep> take_steps() {
    pin_identity_relations();
    return std::move(steps_);
  }
  std::vector<TensorRecord> take_tensors() { return std::move(tensors_); }
  std::vector<OwnedRef> take_weakrefs() { return std::move(weakrefs_); }
  std::vector<OwnedRef> take_identity_refs() { return std::move(identity_refs_); }

 private:
  void push(MemoStep step) { steps_.push_back(step); }
  // reachable(), for the records a held value cannot take: aborts while
  // any value is held (see held()).
  bool reachable_unheld(PyObject* obj);
  // Whether `watches_` now watches `d`, read at `version`.
  bool watched(PyObject* d, uint64_t version) { return watches_ != nullptr && watches_->watch_dict(d, version); }
  // The step that pins `obj`'s type, by tag or by watch.
  MemoStep type_step(PyObject* obj, PyTypeObject* t, unsigned int tag);
  // Whether `t`, whose valid tag is `tag`, is watched for this log (a
  // watch is asked for once per type and recording).
  bool watch_type(PyTypeObject* t, unsigned int tag);
  // Turns the held_slot() steps of each relation this log records whole,
  // and that holds by identity, into SlotAddress steps.
  void pin_identity_relations();

  // A held_slot() step: which slot of which relation, and its index.
  struct HeldSlot {
    RelationalState* state;
    size_t slot;
    size_t step;
  };

  PyObject* memo_value_;  // the memo's own value: never anchored
  WatchSet* watches_;
  bool aborted_ = false;
  std::vector<MemoStep> steps_;
  std::vector<TensorRecord> tensors_;
  std::vector<OwnedRef> weakrefs_;  // the ListItem steps' weak references
  std::vector<OwnedRef> identity_refs_;  // the LiveObject steps' weak references
  std::vector<HeldSlot> held_slots_;
  std::unordered_set<PyObject*> anchored_;
  // The values held now, each with how many reads hold it (one object can
  // be reached twice), and those of them a Type step has already checked
  // since they were first held.
  std::unordered_map<PyObject*, int> held_;
  std::unordered_set<PyObject*> held_typed_;
  std::unordered_set<PyObject*> dicts_;
  std::unordered_set<PyObject*> object_dicts_;
  // The type recorded for an object. Keyed by object and compared with the
  // object's current type: Python code run during the recording can assign
  // __class__, and a type can come back, so a step is skipped only when it
  // would check the very same type.
  std::unordered_map<PyObject*, std::pair<PyTypeObject*, size_t>> types_;  // with the Type step's index
  std::unordered_map<PyObject*, PyTypeObject*> type_tags_;
  std::unordered_set<PyObject*> pinned_types_;  // type_of()'s types
  // The types asked of `watches_` so far, and whether it watches them.
  std::unordered_map<PyTypeObject*, bool> watched_types_;
};

// Holds a value read by MemoRecorder::held_field or held_tuple_item for as
// long as its subtree records, then releases it.
class HeldValue {
 public:
  HeldValue(MemoRecorder& recorder, PyObject* value) : recorder_(recorder), value_(value) {}
  ~HeldValue() { recorder_.release_held(value_); }
  HeldValue(const HeldValue&) = delete;
  HeldValue& operator=(const HeldValue&) = delete;

 private:
  MemoRecorder& recorder_;
  PyObject* value_;
};

class SubtreeMemo;

// Hears of every log that validates on the thread that created it, while it
// lives (the benchmark's tensor floor, memo_tensor_floor.h). The log is
// reported as it validated: every object it names is alive at that moment,
// reached from the memo's value through the reads the log just validated.
// Each thread has its own stack of listeners (a check runs Python code, so
// another thread may install and drop one meanwhile); only the innermost
// listener of the validating thread hears. Made and destroyed with the GIL
// held.
class ValidatedLogListener {
 public:
  ValidatedLogListener(const ValidatedLogListener&) = delete;
  ValidatedLogListener& operator=(const ValidatedLogListener&) = delete;

  // One load and compare on the hot path while no listener exists anywhere.
  static void notify(const SubtreeMemo& memo) {
    if (installed_ != 0) {
      notify_this_thread(memo);
    }
  }

 protected:
  ValidatedLogListener();
  virtual ~ValidatedLogListener();
  virtual void validated(const SubtreeMemo& memo) = 0;

 private:
  static void notify_this_thread(const SubtreeMemo& memo);

  static int installed_;  // listeners alive on all threads
  ValidatedLogListener* previous_;  // this thread's innermost listener before this one
};

class SubtreeMemo {
 public:
  // Evaluates `owner` on `value`: from the log
  // when it validates, else in full while recording a new log.
  bool evaluate(GuardManager& owner, PyObject* value);

  // Recordings that keep aborting stop being attempted; so do logs that keep
  // failing to validate on calls the full check then passes (a value that
  // is a new object on every call, a dict rewritten on every call).
  static constexpr int kMaxAborts = 3;
  static constexpr int kMaxStaleLogs = 8;
  // How many steps ahead validation prefetches a step's object (measured
  // on MobileBert: about 6% off a warm check), and how many checks ahead a
  // DictRun prefetches its dicts.
  static constexpr size_t kPrefetchDistance = 12;
  static constexpr size_t kDictRunPrefetchDistance = 8;

  size_t num_steps() const { return steps_.size(); }
  bool has_log() const { return valid_; }
  // What the log pins by watching; empty on 3.11.
  const WatchSet& watches() const { return *watches_; }
  // The record of one of this log's Tensor steps.
  const TensorRecord& tensor_record(const MemoStep& step) const { return tensors_[step.tag]; }
  // Calls f(kind, object, step) for every step of the log in order, with
  // each fused step as the steps it stands for (introspection and
  // benchmarks); `step` is the stored step, fused or not.
  template <typename F>
  void for_each_step(F f) const {
    for (const MemoStep& step : steps_) {
      if (step.kind == MemoStep::Kind::TaggedObjectDict || step.kind == MemoStep::Kind::TypedObjectDict) {
        bool tagged = step.kind == MemoStep::Kind::TaggedObjectDict;
        f(tagged ? MemoStep::Kind::TypeTag : MemoStep::Kind::Type, step.a, step);
        f(tagged ? MemoStep::Kind::ObjectDict : MemoStep::Kind::ObjectDictSlot,
          static_cast<void*>(static_cast<char*>(step.a) + step.slot_offset),
          step);
        continue;
      }
      if (step.kind == MemoStep::Kind::Tensor) {
        f(step.kind, step.a, step);
        const TensorRecord& record = tensors_[step.tag];
        if (step.slot_offset != 0) {
          f(record.type_tag != 0 ? MemoStep::Kind::TypeTag : MemoStep::Kind::Type, step.a, step);
          f(record.type_tag != 0 ? MemoStep::Kind::ObjectDict : MemoStep::Kind::ObjectDictSlot,
            static_cast<void*>(static_cast<char*>(step.a) + step.slot_offset),
            step);
          if (record.checks_dict_version) {
            f(MemoStep::Kind::Dict, static_cast<void*>(record.object_dict), step);
          }
        }
        if (record.alias_slot != nullptr) {
          f(MemoStep::Kind::SlotAddress, step.a, step);
        }
        continue;
      }
      if (step.kind != MemoStep::Kind::DictRun) {
        f(step.kind, step.a, step);
        continue;
      }
      const DictCheck* run = dict_checks_.data() + step.c;
      for (uintptr_t k = 0; k < reinterpret_cast<uintptr_t>(step.b); ++k) {
        f(MemoStep::Kind::Dict, static_cast<void*>(run[k].dict), step);
      }
    }
  }


 private:
  // Replaces each run of consecutive Dict steps (two or more) by a DictRun
  // whose checks are appended to `dict_checks`. The same checks in the same
  // order: only the dispatch per step goes.
  static void compact(std::vector<MemoStep>& steps, std::vector<DictCheck>& dict_checks);
  // Folds into each Tensor step the steps logged right after it on the
  // same tensor: a Typed/TaggedObjectDict of the tensor's own type (the
  // tensor check compares that type first, so the fused step checks the
  // same things in the same order) with the Dict step of its dict's
  // version where one follows, then a SlotAddress of the tensor.
  // Each tensor of a module (a Parameter's __dict__ is read for its
  // dynamic-dimension marks) thus costs one step instead of two or three.
  static void fuse_tensor_steps(std::vector<MemoStep>& steps, std::vector<TensorRecord>& tensors);
  bool validate(PyObject* value) const;
  struct Validation;
  // Runs steps [0, n) of the log. A Leaf or Walk step that runs Python code
  // may change anything the steps before it compared, in ways no dict
  // version or watch reports (an object's __dict__ slot or __class__
  // reassigned, a cell or list written, an object freed that later steps
  // would read). The walk reads the objects on its path again after such
  // a guard; the log, which checks each object's type, __dict__ slot,
  // field or item once (MemoRecorder de-duplicates them), checks them
  // again after it (kRecheck): every step before it that proves which
  // object a later step reads. Only then do the steps after it run, each
  // on objects proven again. Not rechecked: Dict steps (the dict clock or
  // the watches cover them), and the verdicts of leaves and tensors, which
  // the log, like the walk, takes once per guard in the walk's order, so
  // before that Python code ran, as the walk does.
  template <bool kRecheck>
  bool run_steps(size_t n, Validation& validation) const;
  bool still_holds_after_python(size_t end, Validation& validation) const;

  bool valid_ = false;
  bool disabled_ = false;
  // What the log pins by watching (never null). Replaced, with the log,
  // only while no validation iterates the log.
  std::unique_ptr<WatchSet> watches_ = std::make_unique<WatchSet>();
  int aborts_ = 0;
  int stale_logs_ = 0;  // consecutive passing calls whose log did not validate
  PyObject* value_ = nullptr;  // identity only: compared, never dereferenced
  std::vector<MemoStep> steps_;
  std::vector<DictCheck> dict_checks_;  // the DictRun steps' checks, in log order
  std::vector<TensorRecord> tensors_;   // the Tensor steps' records, in log order
  std::vector<OwnedRef> weakrefs_;      // the ListItem steps' weak references to their items, in log order
  std::vector<OwnedRef> identity_refs_;  // the LiveObject steps' weak references
  // Whether some step pins a dict by its version and some step may run
  // Python code: validation then reads the dict version clock
  // (python_compat.h) around each such step, since that code may change a
  // dict the log checked earlier. (A watched dict voids the WatchSet.)
  bool reads_dict_clock_ = false;
  // Validations of steps_ in progress. A Leaf or Walk step runs Python code,
  // which can evaluate this memo again: on this thread, or on another one
  // once the GIL is dropped. Those must not replace or clear steps_ under the
  // running loop (that freed the log mid-iteration: found by ASan).
  mutable int validating_ = 0;
};

}  // namespace dynamo_guards
