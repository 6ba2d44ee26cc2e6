// The benchmark's lower bound for a sound check of a memoized subtree: the
// time to load one word from every object the check must read, with no
// comparison and nothing followed.
//
// What it reads: every object a memo log names, in log order; for a Tensor
// step also the TensorImpl and the AutogradMeta the log recorded (what
// validation prefetches and TENSOR_MATCH reads, one word each where the real
// check reads several lines of both); and through each Walk step the logs of
// the memoized subtrees below that accessor, which the walk validates on
// every call (a frame whose model is reached through a tuple made afresh for
// every call keeps the model's log one Walk down). A manager without a log
// contributes the logs of the memoized managers below it. What no log names
// (unmemoized leaves, Python guards, dict managers' keys and values) is left
// out, so the figure stays below what any sound check of the subtree costs.
//
// Only meaningful right after a check of the subtree passed on objects that
// are still alive: then every address in those logs is a live object
// (a Walk's subtree and a log-less manager's children ran on that check).
#pragma once

#include <cstdint>
#include <vector>

#include "torch/csrc/dynamo/guard_manager.h"

namespace dynamo_guards {

// Appends the addresses a check of `manager`'s subtree reads at least (see
// above), in the order a check reads them. Nothing is dereferenced. Without
// `tensors`, a Tensor step's three addresses are left out (the tensor
// floor, memo_tensor_floor.h, reads those; the benchmark's check floor adds
// the two).
void collect_memo_touch_addresses(const GuardManager& manager, std::vector<const void*>& addresses, bool tensors);

struct TouchTiming {
  double microseconds_per_pass;
  // A value computed from the words read, so the loads cannot be removed.
  uintptr_t sink;
};

// Loads one word from each address `passes` times; times the loads only.
TouchTiming time_touches(const std::vector<const void*>& addresses, int passes);

}  // namespace dynamo_guards
