// Text an operator pastes into a root shell, built from what a policy names.
#pragma once

#include <string>

namespace oarbank {

// `text` as one word for a POSIX shell: as it is when every character is plain, else in single
// quotes (each ' written '\''). Session 14's review: a path is the policy's, written by a
// module's author, and advice that names it is a command an operator pastes as root (work
// "/srv/d$(touch /x)" ran its substitution; session 21's found the identity step's fix too).
std::string shell_word(const std::string& text);

}  // namespace oarbank
