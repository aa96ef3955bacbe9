// File descriptors: the module receives 0, 1, 2 and the ones its caller names, nothing else.
// Landlock checks rights when a file is opened, so an inherited descriptor is a hole.
#pragma once

#include <vector>

#include "apply/identity.hpp"

namespace oarbank {

// Opens /dev/null on 0, 1 or 2 if closed, so the module's first open() cannot land there.
// Call first, before opening anything. Returns false and fills `error`.
bool ensure_standard_descriptors(StepError& error);

// True if `fd` is open in this process.
bool descriptor_is_open(int fd);

// Marks every descriptor from 3 up close-on-exec, except `keep` (cleared close-on-exec).
bool close_on_exec_except(const std::vector<int>& keep, StepError& error);

// Closes every descriptor but 0, 1, 2 and `keep` (close_range, Linux 5.9; on an older kernel
// nothing is closed). For a helper process forked from the supervisor (the egress relay, the
// terminal front) that must hold none of the run's files.
void close_all_but(std::vector<int> keep);

}  // namespace oarbank
