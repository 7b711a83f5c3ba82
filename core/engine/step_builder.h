// Translate the scheduler's plan for a step into the backend's StepInput.
#pragma once

#include "core/backend/backend.h"
#include "core/sched/scheduler_output.h"

namespace inferdesk {

StepInput build_step_input(const SchedulerOutput& out);

}  // namespace inferdesk
