// The benchmark's floor for a manager's own leaf guards: the time to run
// them on one value, in the order a check runs them, with nothing else of
// the check around them. On a frame's root these are torch's ambient guards
// (global state, the torch-function mode stack, the default device, the
// saved-tensors hooks lambda, function code matches): every check of the
// frame runs them, stock's and the fork's alike, whatever is memoized below.
#pragma once

#include <Python.h>

#include "torch/csrc/dynamo/guard_manager.h"

namespace dynamo_guards {

struct LeafFloorTiming {
  double microseconds_per_pass;
  bool passed;  // every leaf passed on every pass
};

// Runs `manager`'s leaf guards on `value` (borrowed) `passes` times and times
// the runs only. A pass stops at the first leaf that fails, as a check does.
LeafFloorTiming time_leaf_guards(const GuardManager& manager, PyObject* value, int passes);

}  // namespace dynamo_guards
