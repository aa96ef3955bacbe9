// Issue 14: sandbox-run --learn N POLICY.json -- ARGV: runs the module up to N times under
// sandbox-run (this very binary, as a child), each time with a proposed policy widened by the
// grants of what was refused (plan/denials.hpp's apply_grant), never by what no policy may
// grant; then prints the proposal and its difference from the given policy. It never writes
// the given policy or applies one by itself: each trial's policy is a temporary file of its
// own, removed afterwards (docs/denials.md).
#pragma once

#include "cli/exec_args.hpp"

namespace oarbank::cli {

// The last run's exit code (64 on a usage error, 70 when a trial could not start).
int run_learn(const RunArgs& options);

}  // namespace oarbank::cli
