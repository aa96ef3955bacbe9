#include "plan/launch_steps.hpp"

namespace oarbank {

// The enum's values index the list: a step added in one place and not the other fails here.
static_assert([] {
  for (std::size_t i = 0; i < kLaunchSteps.size(); ++i) {
    if (static_cast<std::size_t>(kLaunchSteps[i].step) != i) return false;
  }
  return true;
}());
static_assert(static_cast<std::size_t>(LaunchStep::Teardown) + 1 == kLaunchSteps.size());
static_assert([] {
  for (const auto& step : launcher_steps()) {
    if (step.runner != StepRunner::Launcher) return false;
  }
  return true;
}());

std::optional<LaunchStep> step_from_name(std::string_view name) {
  for (const auto& step : kLaunchSteps) {
    if (step.name == name) return step.step;
  }
  return std::nullopt;
}

std::string step_failed_message(LaunchStep step, std::string_view what) {
  std::string message = "step ";
  message += step_name(step);
  message += " failed: ";
  message += what;
  return message;
}

Error step_error(LaunchStep step, std::string_view what, int err, ErrorKind kind) {
  std::string message = step_failed_message(step, what);
  if (err != 0) message += ": " + errno_text(err);
  return Error(kind, step, std::string(), message, err);
}

}  // namespace oarbank
