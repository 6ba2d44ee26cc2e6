#include "torch/csrc/dynamo/subtree_memo.h"

#include "torch/csrc/dynamo/attribute_resolution.h"
#include "torch/csrc/dynamo/check_context.h"
#include "torch/csrc/dynamo/guard_accessor.h"
#include "torch/csrc/dynamo/guard_manager.h"
#include "torch/csrc/dynamo/inline_values.h"
#include "torch/csrc/dynamo/leaf_guard.h"
#include "torch/csrc/dynamo/relational_guards.h"
#include "torch/csrc/dynamo/tensor_match.h"

namespace dynamo_guards {

const char* memo_step_kind_name(MemoStep::Kind kind) {
  switch (kind) {
    case MemoStep::Kind::ObjectDict:
      return "ObjectDict";
    case MemoStep::Kind::Dict:
      return "Dict";
    case MemoStep::Kind::Type:
      return "Type";
    case MemoStep::Kind::TypeTag:
      return "TypeTag";
    case MemoStep::Kind::Leaf:
      return "Leaf";
    case MemoStep::Kind::Tensor:
      return "Tensor";
    case MemoStep::Kind::Walk:
      return "Walk";
    case MemoStep::Kind::DictRun:
      return "DictRun";
    case MemoStep::Kind::TaggedObjectDict:
      return "TaggedObjectDict";
    case MemoStep::Kind::ObjectDictSlot:
      return "ObjectDictSlot";
    case MemoStep::Kind::FieldIdentity:
      return "FieldIdentity";
    case MemoStep::Kind::TypedObjectDict:
      return "TypedObjectDict";
    case MemoStep::Kind::ListItem:
      return "ListItem";
    case MemoStep::Kind::SlotAddress:
      return "SlotAddress";
    case MemoStep::Kind::TupleItem:
      return "TupleItem";
    case MemoStep::Kind::LiveObject:
      return "LiveObject";
    case MemoStep::Kind::ClassTag:
      return "ClassTag";
  }
  return "?";
}

void MemoRecorder::object_dict(PyObject* obj) {
  if (!reachable_unheld(obj)) {
    return;
  }
  if (obj == memo_value_) {
    // The memo's value is matched by address only: pin its type (and so its
    // layout) before any step reads inside it.
    type(obj);
  }
  if (!object_dicts_.insert(obj).second) {
    return;
  }
  PyObject** slot = _PyObject_GetDictPtr(obj);
  PyObject* d = slot != nullptr ? *slot : nullptr;
  if (slot == nullptr || (d != nullptr && !PyDict_Check(d))) {
    abort();  // no __dict__ slot to pin
    return;
  }
  if (d != nullptr && !make_dict_writes_reported(obj, d)) {
    abort();  // the dict's version would not see every attribute write
    return;
  }
  ptrdiff_t offset = reinterpret_cast<char*>(slot) - reinterpret_cast<char*>(obj);
  // Read before the watch is set: watch_dict then refuses a dict that
  // changed in between.
  const uint64_t version = d != nullptr ? dict_version(d) : 0;
  const bool dict_watched = d != nullptr && watched(d, version);
  MemoStep* last = steps_.empty() ? nullptr : &steps_.back();
  if (last != nullptr && last->a == obj && (last->kind == MemoStep::Kind::TypeTag || last->kind == MemoStep::Kind::Type) &&
      offset >= INT16_MIN && offset <= INT16_MAX) {
    // The step just logged pins this object's type: one step checks both,
    // and the dict's version, unless watched, joins the dict checks that
    // follow.
    if (last->kind == MemoStep::Kind::TypeTag) {
      last->tag = static_cast<uint32_t>(last->c);
      last->kind = MemoStep::Kind::TaggedObjectDict;
    } else {
      last->kind = MemoStep::Kind::TypedObjectDict;
    }
    last->slot_offset = static_cast<int16_t>(offset);
    last->c = reinterpret_cast<uintptr_t>(d);
    if (d != nullptr && !dict_watched) {
      push({MemoStep::Kind::Dict, d, nullptr, version});
    }
  } else if (dict_watched) {
    push({MemoStep::Kind::ObjectDictSlot, slot, d, 0});
  } else {
    push({MemoStep::Kind::ObjectDict, slot, d, version});
  }
  if (d != nullptr) {
    dicts_.insert(d);  // validated by this step
    anchor(d);
  }
}

void MemoRecorder::dict(PyObject* d) {
  if (!reachable_unheld(d)) {
    return;
  }
  if (!PyDict_Check(d) || !dict_writes_reported(d)) {
    abort();  // a version would not pin it (inline_values.h)
    return;
  }
  if (d == memo_value_) {
    type(d);  // as in object_dict: the version is read only from a dict
  }
  if (!dicts_.insert(d).second) {
    return;
  }
  const uint64_t version = dict_version(d);
  if (!watched(d, version)) {
    push({MemoStep::Kind::Dict, d, nullptr, version});
  }
}

void MemoRecorder::type(PyObject* obj) {
  if (!reachable(obj)) {
    return;
  }
  PyTypeObject* t = Py_TYPE(obj);
  if (held(obj)) {
    // Possibly another object at the recorded address: its type is checked
    // before any step reads it by layout, once while it stays held (no
    // Python code runs meanwhile, so no __class__ assignment either).
    if (held_typed_.insert(obj).second) {
      push({MemoStep::Kind::Type, obj, t, 0});
    }
    return;
  }
  if (obj != memo_value_ && PyType_HasFeature(t, Py_TPFLAGS_IMMUTABLETYPE) && !PyType_IsSubtype(t, &PyModule_Type)) {
    // Needs no step: a reachable object other than the memo's value is the
    // very object recorded (validated dicts hold it), and CPython refuses
    // __class__ assignment from an immutable type (dict, int, str, tuple,
    // bool...) except between module types.
    return;
  }
  auto tagged = type_tags_.find(obj);
  auto typed = types_.find(obj);
  if ((tagged != type_tags_.end() && tagged->second == t) || (typed != types_.end() && typed->second.first == t)) {
    return;  // the same check is already in the log
  }
  types_[obj] = {t, steps_.size()};
  push({MemoStep::Kind::Type, obj, t, 0});
}

bool MemoRecorder::list_item(PyObject* list, Py_ssize_t index, PyObject* item) {
  if (!reachable_unheld(list)) {
    return false;
  }
  if (!anchored(list) && list != memo_value_) {
    return false;
  }
  if (!PyList_CheckExact(list) || !PyType_SUPPORTS_WEAKREFS(Py_TYPE(item))) {
    return false;
  }
  type(list);  // the memo's value is matched by address: pin that it is a list before the step reads it as one
  OwnedRef ref(PyWeakref_NewRef(item, nullptr));
  if (!ref) {
    PyErr_Clear();
    return false;
  }
  MemoStep step(MemoStep::Kind::ListItem, list, item, static_cast<uint64_t>(index));
  step.tag = static_cast<uint32_t>(weakrefs_.size());
  weakrefs_.push_back(std::move(ref));
  push(step);
  anchor(item);
  return true;
}

bool MemoRecorder::live_object(PyObject* obj) {
  if (!reachable(obj) || !PyType_SUPPORTS_WEAKREFS(Py_TYPE(obj))) {
    return false;
  }
  OwnedRef ref(PyWeakref_NewRef(obj, nullptr));
  if (!ref) {
    PyErr_Clear();
    return false;
  }
  push(MemoStep(MemoStep::Kind::LiveObject, obj, ref.get(), 0));
  identity_refs_.push_back(std::move(ref));
  return true;
}

bool MemoRecorder::tuple_item(PyObject* tuple, Py_ssize_t index, PyObject* item) {
  if (!PyTuple_CheckExact(tuple) || index < 0 || index >= PyTuple_GET_SIZE(tuple) ||
      PyTuple_GET_ITEM(tuple, index) != item || !reachable(tuple)) {
    return false;
  }
  type(tuple);
  push({MemoStep::Kind::TupleItem, tuple, item, static_cast<uint64_t>(index)});
  return true;
}

void MemoRecorder::type_tag(PyObject* obj) {
  if (!reachable_unheld(obj)) {
    return;
  }
  PyTypeObject* t = Py_TYPE(obj);
  auto tagged = type_tags_.find(obj);
  if (tagged != type_tags_.end() && tagged->second == t) {
    return;
  }
  const unsigned int tag = type_version_tag(t);
  if (tag == 0) {
    abort();  // no tag to pin the class-level decisions to
    return;
  }
  type_tags_[obj] = t;
  const MemoStep step = type_step(obj, t, tag);
  auto typed = types_.find(obj);
  if (typed != types_.end() && typed->second.first == t) {
    // The log already checks this object's type: that step checks the tag
    // too (it also compares the type), at the earlier position, where the
    // object is as reachable as here. It may since have taken the object's
    // __dict__ slot (object_dict), which it must go on checking; a watched
    // type needs nothing more than the type compare already there.
    MemoStep& earlier = steps_[typed->second.second];
    if (step.kind == MemoStep::Kind::TypeTag && earlier.kind == MemoStep::Kind::Type) {
      earlier = step;
    } else if (step.kind == MemoStep::Kind::TypeTag && earlier.kind == MemoStep::Kind::TypedObjectDict) {
      earlier.kind = MemoStep::Kind::TaggedObjectDict;
      earlier.tag = tag;
    }
    return;
  }
  push(step);
}

bool MemoRecorder::watch_type(PyTypeObject* t, unsigned int tag) {
  auto known = watched_types_.find(t);
  if (known == watched_types_.end()) {
    known = watched_types_.emplace(t, watches_ != nullptr && watches_->watch_type(t, tag)).first;
  }
  return known->second;
}

MemoStep MemoRecorder::type_step(PyObject* obj, PyTypeObject* t, unsigned int tag) {
  // A watched type's tag needs no check: its first change marks the log's
  // WatchSet changed. (Had it changed since it was watched here, for an
  // earlier object, the set would be changed already.)
  if (watch_type(t, tag)) {
    return {MemoStep::Kind::Type, obj, t, 0};
  }
  return {MemoStep::Kind::TypeTag, obj, t, tag};
}

bool MemoRecorder::field_identity(PyObject* holder, PyObject* const* field, PyObject* value) {
  if (!reachable(holder)) {
    return false;
  }
  type(holder);  // the field's offset is the type's
  push({MemoStep::Kind::FieldIdentity, const_cast<PyObject**>(field), value, 0});
  return true;
}

bool MemoRecorder::reachable_unheld(PyObject* obj) {
  if (!held_.empty()) {
    abort();  // see held(): nothing but field, item, type and Python-free leaf steps while a value is held
    return false;
  }
  return reachable(obj);
}

bool MemoRecorder::held_field(PyObject* holder, PyObject* const* field, PyObject* value) {
  if (*field != value || !field_identity(holder, field, value)) {
    return false;
  }
  ++held_[value];
  return true;
}

bool MemoRecorder::held_tuple_item(PyObject* tuple, Py_ssize_t index, PyObject* item) {
  if (!tuple_item(tuple, index, item)) {
    return false;
  }
  ++held_[item];
  return true;
}

void MemoRecorder::release_held(PyObject* value) {
  auto it = held_.find(value);
  if (it != held_.end() && --it->second == 0) {
    held_.erase(it);
  }
  if (held_.empty()) {
    held_typed_.clear();
  }
}

bool MemoRecorder::type_of(PyObject* obj) {
  if (!reachable_unheld(obj)) {
    return false;
  }
  type_tag(obj);
  if (aborted_) {
    return false;
  }
  PyObject* t = reinterpret_cast<PyObject*>(Py_TYPE(obj));
  anchor(t);
  pinned_types_.insert(t);
  return true;
}

bool MemoRecorder::type_state(PyObject* type) {
  if (!PyType_Check(type) || !reachable_unheld(type)) {
    return false;
  }
  if (type_state_pinned(type)) {
    return true;
  }
  auto* t = reinterpret_cast<PyTypeObject*>(type);
  const unsigned int tag = assigned_type_version_tag(t);
  if (tag == 0) {
    return false;
  }
  if (!watch_type(t, tag)) {
    if (type == memo_value_) {
      // Matched by address only: the step reads inside it as a class, so
      // its type (a metaclass, hence the layout) is pinned first.
      this->type(type);
    }
    push({MemoStep::Kind::ClassTag, type, nullptr, tag});
  }
  pinned_types_.insert(type);
  return true;
}

void MemoRecorder::module_dicts(PyObject* module) {
  if (!reachable_unheld(module)) {
    return;
  }
  object_dict(module);
  PyObject* d = instance_dict(module);
  if (d == nullptr || !PyDict_Check(d)) {
    return;
  }
  for (const char* key : {"_parameters", "_buffers", "_modules"}) {
    PyObject* sub = PyDict_GetItemString(d, key);  // borrowed, held by the validated __dict__
    if (sub != nullptr && !PyDict_CheckExact(sub)) {
      // nn.Module.__getattr__ would run the subclass's own lookup.
      abort();
      return;
    }
    if (sub != nullptr) {
      anchor(sub);  // held by the validated __dict__
      dict(sub);
    }
  }
}

bool MemoRecorder::instance_lookup(PyObject* obj, AttrPath path) {
  if (!reachable_unheld(obj)) {
    return false;
  }
  switch (path) {
    case AttrPath::InstanceDictOnly:
    case AttrPath::InstanceDictThenClass:
      type_tag(obj);
      object_dict(obj);
      return true;
    case AttrPath::ModuleDicts:
      if (!module_dicts_are_exact(obj)) {
        return false;
      }
      type_tag(obj);
      module_dicts(obj);
      return true;
    case AttrPath::GetAttr:
      return false;
  }
  return false;
}

void MemoRecorder::leaf(LeafGuard* guard, PyObject* value) {
  const bool runs_python = guard->may_run_python();
  if (runs_python ? !reachable_unheld(value) : !reachable(value)) {
    return;
  }
  push({MemoStep::Kind::Leaf, value, guard, runs_python ? 1u : 0u});
}

void MemoRecorder::python_free_leaf(LeafGuard* guard, PyObject* value) {
  if (!reachable(value)) {
    return;
  }
  push({MemoStep::Kind::Leaf, value, guard, 0});
}

void MemoRecorder::address_slot(PyObject** address, PyObject* value) {
  if (!reachable_unheld(value)) {
    return;
  }
  push({MemoStep::Kind::SlotAddress, value, address, 0});
}

void MemoRecorder::held_slot(LeafGuard* slot_leaf, RelationalState& state, size_t slot, PyObject* value) {
  if (!reachable_unheld(value)) {
    return;
  }
  held_slots_.push_back({&state, slot, steps_.size()});
  push({MemoStep::Kind::Leaf, value, slot_leaf, slot_leaf->may_run_python() ? 1u : 0u});
}

void MemoRecorder::pin_identity_relations() {
  std::unordered_map<RelationalState*, std::vector<const HeldSlot*>> by_relation;
  for (const HeldSlot& held : held_slots_) {
    by_relation[held.state].push_back(&held);
  }
  for (const auto& [state, slots] : by_relation) {
    if (slots.size() != state->num_slots()) {
      continue;
    }
    std::vector<PyObject*> recorded(state->num_slots(), nullptr);
    bool each_slot_once = true;
    for (const HeldSlot* held : slots) {
      each_slot_once &= recorded[held->slot] == nullptr;
      recorded[held->slot] = static_cast<PyObject*>(steps_[held->step].a);
    }
    if (!each_slot_once || !state->holds_by_identity(recorded)) {
      continue;
    }
    for (const HeldSlot* held : slots) {
      MemoStep& step = steps_[held->step];
      step = MemoStep(MemoStep::Kind::SlotAddress, step.a, state->where_recorded(held->slot), 0);
    }
  }
  held_slots_.clear();
}

void MemoRecorder::tensor(TENSOR_MATCH* guard, PyObject* value, const void* impl, const void* autograd_meta) {
  if (!reachable_unheld(value)) {
    return;
  }
  MemoStep step(MemoStep::Kind::Tensor, value, guard, reinterpret_cast<uintptr_t>(impl));
  step.tag = static_cast<uint32_t>(tensors_.size());
  tensors_.push_back({guard->expectation(), autograd_meta});
  push(step);
}

void MemoRecorder::walk(GuardAccessor* accessor, PyObject* parent) {
  if (!reachable_unheld(parent)) {
    return;
  }
  push({MemoStep::Kind::Walk, parent, accessor, reinterpret_cast<uintptr_t>(accessor->child())});
}

bool tensor_record_matches(
    const TensorRecord& record,
    const TENSOR_MATCH* guard,
    PyObject* tensor,
    const TensorLocalState& state) {
  return record.expected.all_static ? tensor_matches_static(record.expected, tensor, state)
                                    : guard->matches(tensor, state);
}

int ValidatedLogListener::installed_ = 0;

namespace {
thread_local ValidatedLogListener* tls_validated_log_listener = nullptr;
}  // namespace

ValidatedLogListener::ValidatedLogListener() : previous_(tls_validated_log_listener) {
  tls_validated_log_listener = this;
  ++installed_;
}

ValidatedLogListener::~ValidatedLogListener() {
  tls_validated_log_listener = previous_;
  --installed_;
}

void ValidatedLogListener::notify_this_thread(const SubtreeMemo& memo) {
  if (ValidatedLogListener* listener = tls_validated_log_listener) {
    listener->validated(memo);
  }
}

static_assert(static_cast<int>(MemoStep::Kind::Tensor) == static_cast<int>(MemoStep::Kind::Leaf) + 1 &&
                  static_cast<int>(MemoStep::Kind::Walk) == static_cast<int>(MemoStep::Kind::Leaf) + 2,
              "validate's prefetch tells Leaf, Tensor and Walk steps apart from the rest by one range compare");

namespace {

// The items the ListItem steps proved, held until validation ends: the
// referents of the log's first `count` weak references (a ListItem step's
// tag numbers it in log order), alive because held. No allocation.
struct ProvenItems {
  const std::vector<OwnedRef>& refs;
  size_t count = 0;
  ~ProvenItems() {
    for (size_t k = 0; k < count; ++k) {
      Py_DECREF(own_weakref_referent(refs[k].get()));
    }
  }
};

}  // namespace

// What one validation carries from step to step.
struct SubtreeMemo::Validation {
  const WatchSet& watches;
  const bool reads_dict_clock;
  DictClock clock;
  ProvenItems proven_items;
  // The dispatch state of this evaluation, read on the first Tensor step
  // and shared by the rest: a Leaf or Walk step that runs a nested
  // evaluation restores the outer state before it returns.
  TensorLocalState fresh_state;
  const TensorLocalState* tensor_state = nullptr;

  // After a step that may have run Python code: no dict was created or
  // changed meanwhile, so every dict the log checked by version still is
  // what the check saw, and no watched one changed either.
  bool untouched() {
    if (watches.changed()) {
      return false;
    }
    return !reads_dict_clock || dicts_untouched_since(clock);
  }
};

bool SubtreeMemo::validate(PyObject* value) const {
  // The watched dicts and types stand unchanged, or the log is void.
  const WatchSet& watches = *watches_;
  if (value != value_ || watches.changed()) {
    return false;
  }
  struct InProgress {
    int& count;
    explicit InProgress(int& c) : count(c) { ++count; }
    ~InProgress() { --count; }
  } in_progress(validating_);
  Validation validation{
      watches, reads_dict_clock_, reads_dict_clock_ ? read_dict_clock() : DictClock{}, ProvenItems{weakrefs_}};
  return run_steps<false>(steps_.size(), validation);
}

bool SubtreeMemo::still_holds_after_python(size_t end, Validation& validation) const {
  return validation.untouched() && run_steps<true>(end, validation);
}

template <bool kRecheck>
bool SubtreeMemo::run_steps(size_t n, Validation& validation) const {
  const MemoStep* steps = steps_.data();
  for (size_t i = 0; i < n; ++i) {
    // Start loading the object a later step reads: the steps are cheap and
    // their objects scattered, so a check otherwise waits on one cache miss
    // at a time. A prefetch never faults and changes no result, so a later
    // step's object may have died meanwhile; it is only ever dereferenced
    // once the steps before it have validated.
    if (i + kPrefetchDistance < n) {
      const MemoStep& ahead = steps[i + kPrefetchDistance];
      __builtin_prefetch(ahead.a);
      // Leaf, Tensor and Walk steps are adjacent kinds: the other steps pay
      // one compare here.
      if (static_cast<unsigned>(ahead.kind) - static_cast<unsigned>(MemoStep::Kind::Leaf) <= 2u) {
        if (ahead.kind == MemoStep::Kind::Tensor) {
          prefetch_tensor_metadata(reinterpret_cast<const void*>(ahead.c), tensors_[ahead.tag]);
        } else {
          __builtin_prefetch(ahead.b);  // the engine's own guard or accessor
          if (ahead.kind == MemoStep::Kind::Walk) {
            __builtin_prefetch(reinterpret_cast<const void*>(ahead.c));  // its child manager
          }
        }
      }
    }
    const MemoStep& s = steps[i];
    // Most steps are of three kinds: an object's type and __dict__ slot
    // (watched from 3.12 on, tagged on 3.11) and a tensor. Each is tested
    // first by a conditional branch, which the processor predicts from the
    // recent steps' kinds; the switch's one indirect jump, shared by every
    // step, mispredicts whenever the kind differs from the last step's
    // (docs/benchmarks.md: about 5% of a decode step's check).
    if (s.kind == MemoStep::Kind::TypedObjectDict) {
      // The type is compared first: an equal type means the recorded
      // layout, so the slot is at the recorded offset. The type is
      // watched: no tag to compare.
      PyObject* obj = static_cast<PyObject*>(s.a);
      if (Py_TYPE(obj) != s.b ||
          *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + s.slot_offset) != reinterpret_cast<PyObject*>(s.c)) {
        return false;
      }
      continue;
    }
    if (s.kind == MemoStep::Kind::Tensor) {
      if (validation.tensor_state == nullptr) {
        validation.tensor_state = &TensorLocalState::current(validation.fresh_state);
      }
      const TensorRecord& record = tensors_[s.tag];
      PyObject* tensor = static_cast<PyObject*>(s.a);
      if (kRecheck) {
        // The tensor's own verdict stands (run_steps); what later steps
        // rely on is its __dict__ slot, fused here, at the recorded
        // offset of the recorded exact type.
        if (s.slot_offset == 0) {
          continue;
        }
        if (record.expected.all_static ? Py_TYPE(tensor) != reinterpret_cast<PyTypeObject*>(record.expected.pytype)
                                       : !tensor_record_matches(
                                             record, static_cast<const TENSOR_MATCH*>(s.b), tensor, *validation.tensor_state)) {
          return false;
        }
      } else if (!tensor_record_matches(
                     record, static_cast<const TENSOR_MATCH*>(s.b), tensor, *validation.tensor_state)) {
        return false;
      }
      // The tensor's type is the recorded one (just compared): its
      // __dict__ slot lies at the recorded offset.
      if (s.slot_offset != 0 &&
          ((record.type_tag != 0 && type_version_tag(Py_TYPE(tensor)) != record.type_tag) ||
           *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(tensor) + s.slot_offset) != record.object_dict ||
           (record.checks_dict_version && dict_version(record.object_dict) != record.dict_version))) {
        return false;
      }
      if (record.alias_slot != nullptr) {
        *record.alias_slot = tensor;
      }
      continue;
    }
    if (s.kind == MemoStep::Kind::TaggedObjectDict) {
      // As TypedObjectDict, with the type's version tag compared too.
      PyObject* obj = static_cast<PyObject*>(s.a);
      PyTypeObject* t = Py_TYPE(obj);
      if (t != s.b || type_version_tag(t) != s.tag ||
          *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + s.slot_offset) != reinterpret_cast<PyObject*>(s.c)) {
        return false;
      }
      continue;
    }
    switch (s.kind) {
      case MemoStep::Kind::TypedObjectDict:
      case MemoStep::Kind::Tensor:
      case MemoStep::Kind::TaggedObjectDict:
        break;  // tested above
      case MemoStep::Kind::ObjectDict: {
        PyObject* d = *static_cast<PyObject**>(s.a);
        if (d != s.b || (d != nullptr && dict_version(d) != s.c)) {
          return false;
        }
        break;
      }
      case MemoStep::Kind::Dict:
        // Rechecked: the dict clock just read covers what a version would.
        if (!kRecheck && dict_version(static_cast<PyObject*>(s.a)) != s.c) {
          return false;
        }
        break;
      case MemoStep::Kind::Type:
        if (Py_TYPE(static_cast<PyObject*>(s.a)) != s.b) {
          return false;
        }
        break;
      case MemoStep::Kind::TypeTag: {
        PyTypeObject* t = Py_TYPE(static_cast<PyObject*>(s.a));
        if (t != s.b || type_version_tag(t) != s.c) {
          return false;
        }
        break;
      }
      case MemoStep::Kind::Leaf:
        // A leaf may run Python code (a lambda guard), which may change
        // what the steps before it checked, or let another thread do it
        // (still_holds_after_python). Rechecking, a leaf's verdict stands.
        if (kRecheck) {
          break;
        }
        if (!static_cast<LeafGuard*>(s.b)->check(static_cast<PyObject*>(s.a)) ||
            (s.c != 0 && !still_holds_after_python(i, validation))) {
          return false;
        }
        break;
      case MemoStep::Kind::Walk:
        if (kRecheck) {
          break;  // as a Python leaf's
        }
        if (!static_cast<GuardAccessor*>(s.b)->check(static_cast<PyObject*>(s.a), nullptr) ||
            !still_holds_after_python(i, validation)) {
          return false;
        }
        break;
      case MemoStep::Kind::ObjectDictSlot:
        // The dict is watched; what stays to compare is which dict the
        // object holds.
      case MemoStep::Kind::FieldIdentity:
        if (*static_cast<PyObject**>(s.a) != s.b) {
          return false;
        }
        break;
      case MemoStep::Kind::SlotAddress:
        if (!kRecheck) {
          *static_cast<PyObject**>(s.b) = static_cast<PyObject*>(s.a);
        }
        break;
      case MemoStep::Kind::TupleItem: {
        // A step before this one pinned the type: an exact tuple.
        PyObject* tuple = static_cast<PyObject*>(s.a);
        const auto index = static_cast<Py_ssize_t>(s.c);
        if (index >= PyTuple_GET_SIZE(tuple) || PyTuple_GET_ITEM(tuple, index) != s.b) {
          return false;
        }
        break;
      }
      case MemoStep::Kind::ListItem: {
        // The list is reachable, and stays a list: an exact list's class
        // cannot be assigned.
        PyObject* list = static_cast<PyObject*>(s.a);
        const auto index = static_cast<Py_ssize_t>(s.c);
        if (index >= PyList_GET_SIZE(list) || PyList_GET_ITEM(list, index) != s.b ||
            own_weakref_referent(weakrefs_[s.tag].get()) != s.b) {
          return false;
        }
        if (!kRecheck) {
          Py_INCREF(static_cast<PyObject*>(s.b));
          ++validation.proven_items.count;
        }
        break;
      }
      case MemoStep::Kind::LiveObject:
        if (own_weakref_referent(static_cast<PyObject*>(s.b)) != s.a) {
          return false;
        }
        break;
      case MemoStep::Kind::ClassTag:
        if (type_version_tag(static_cast<PyTypeObject*>(s.a)) != s.c) {
          return false;
        }
        break;
      case MemoStep::Kind::DictRun: {
        if (kRecheck) {
          break;  // as a Dict step's
        }
        const DictCheck* run = dict_checks_.data() + s.c;
        const DictCheck* end = run + reinterpret_cast<uintptr_t>(s.b);
        const DictCheck* last = dict_checks_.data() + dict_checks_.size();
        for (; run != end; ++run) {
          if (last - run > static_cast<ptrdiff_t>(kDictRunPrefetchDistance)) {
            __builtin_prefetch(run[kDictRunPrefetchDistance].dict);
          }
          if (dict_version(run->dict) != run->version) {
            return false;
          }
        }
        break;
      }
    }
  }
  return true;
}

void SubtreeMemo::fuse_tensor_steps(std::vector<MemoStep>& steps, std::vector<TensorRecord>& tensors) {
  std::vector<MemoStep> out;
  out.reserve(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    out.push_back(steps[i]);
    if (steps[i].kind != MemoStep::Kind::Tensor) {
      continue;
    }
    MemoStep& fused = out.back();
    TensorRecord& record = tensors[fused.tag];
    // Every Tensor step compares the tensor's exact type with
    // expected.pytype before anything else (matching_tensor), so a
    // following step that compares the same type again is implied by it.
    if (i + 1 < steps.size()) {
      const MemoStep& next = steps[i + 1];
      const bool dict_step = next.kind == MemoStep::Kind::TypedObjectDict || next.kind == MemoStep::Kind::TaggedObjectDict;
      if (dict_step && next.a == fused.a && next.b == record.expected.pytype && next.slot_offset != 0) {
        fused.slot_offset = next.slot_offset;
        record.object_dict = reinterpret_cast<PyObject*>(next.c);
        record.type_tag = next.kind == MemoStep::Kind::TaggedObjectDict ? next.tag : 0;
        ++i;
        // The dict the slot holds is alive while the slot still holds it.
        if (i + 1 < steps.size() && steps[i + 1].kind == MemoStep::Kind::Dict && record.object_dict != nullptr &&
            steps[i + 1].a == record.object_dict) {
          record.dict_version = steps[i + 1].c;
          record.checks_dict_version = true;
          ++i;
        }
      }
    }
    if (i + 1 < steps.size() && steps[i + 1].kind == MemoStep::Kind::SlotAddress && steps[i + 1].a == fused.a) {
      record.alias_slot = static_cast<PyObject**>(steps[i + 1].b);
      ++i;
    }
  }
  steps = std::move(out);
}

void SubtreeMemo::compact(std::vector<MemoStep>& steps, std::vector<DictCheck>& dict_checks) {
  std::vector<MemoStep> out;
  out.reserve(steps.size());
  size_t i = 0;
  while (i < steps.size()) {
    size_t end = i;
    while (end < steps.size() && steps[end].kind == MemoStep::Kind::Dict) {
      ++end;
    }
    if (end - i < 2) {
      out.push_back(steps[i]);
      ++i;
      continue;
    }
    MemoStep run(MemoStep::Kind::DictRun, steps[i].a, reinterpret_cast<void*>(end - i), dict_checks.size());
    for (; i < end; ++i) {
      dict_checks.push_back({static_cast<PyObject*>(steps[i].a), steps[i].c});
    }
    out.push_back(run);
  }
  steps = std::move(out);
}

bool SubtreeMemo::evaluate(GuardManager& owner, PyObject* value) {
  if (disabled_) {
    return owner.check_subtree(value, nullptr);
  }
  bool had_log = valid_;
  if (valid_ && validate(value)) {
    stale_logs_ = 0;
    ValidatedLogListener::notify(*this);
    return true;
  }
  valid_ = false;
  auto watches = std::make_unique<WatchSet>();
  MemoRecorder recorder(value, watches.get());
  CheckContext ctx;
  ctx.recorder = &recorder;
  bool ok = owner.check_subtree(value, &ctx);
  if (!ok) {
    return false;
  }
  if (had_log && ++stale_logs_ >= kMaxStaleLogs) {
    disabled_ = true;
    if (validating_ == 0) {
      steps_.clear();
      dict_checks_.clear();
      tensors_.clear();
      weakrefs_.clear();
      identity_refs_.clear();
      watches_->clear();
    }
    return true;
  }
  if (recorder.aborted()) {
    disabled_ = ++aborts_ >= kMaxAborts;
    return true;
  }
  if (validating_ != 0) {
    // A validation further up this stack or in a thread waiting for the GIL
    // still iterates the current log: keep it, and record again next call
    // (valid_ stays false).
    return true;
  }
  aborts_ = 0;
  watches_ = std::move(watches);  // the previous set stops watching
  steps_ = recorder.take_steps();
  tensors_ = recorder.take_tensors();
  weakrefs_ = recorder.take_weakrefs();
  identity_refs_ = recorder.take_identity_refs();
  bool pins_versions = false;
  bool runs_python = false;
  for (const MemoStep& step : steps_) {
    pins_versions |= step.kind == MemoStep::Kind::Dict || (step.kind == MemoStep::Kind::ObjectDict && step.b != nullptr);
    runs_python |= step.kind == MemoStep::Kind::Walk || (step.kind == MemoStep::Kind::Leaf && step.c != 0);
  }
  reads_dict_clock_ = pins_versions && runs_python;
  dict_checks_.clear();
  fuse_tensor_steps(steps_, tensors_);
  compact(steps_, dict_checks_);
  value_ = value;
  valid_ = true;
  return true;
}

}  // namespace dynamo_guards
