// Reading the small text files of /proc and the cgroup file system whole.
#pragma once

#include <string>

namespace oarbank {

// The file's whole text; "" when it cannot be opened (a process that is gone, a controller's
// file that does not exist: the callers treat both as "nothing there").
std::string read_text_file(const std::string& path);
// The text from offset 0 of an open descriptor (pread: its offset is not moved).
std::string read_fd_text(int fd);

}  // namespace oarbank
