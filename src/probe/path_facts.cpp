#include "probe/path_facts.hpp"

#include <fcntl.h>
#include <sys/stat.h>

namespace oarbank {

PathKind OpenedPaths::kind(const std::string& path) const {
  auto it = entries_.find(path);
  if (it != entries_.end()) return it->second.kind;
  Entry entry;
  // Symbolic links are followed, as the kernel does when the module opens the path.
  entry.fd.reset(::open(path.c_str(), O_PATH | O_CLOEXEC));
  struct stat st {};
  if (entry.fd.valid() && ::fstat(entry.fd.get(), &st) == 0) {
    entry.kind = S_ISDIR(st.st_mode) ? PathKind::Directory : PathKind::File;
  } else {
    entry.fd.reset();
  }
  PathKind result = entry.kind;
  entries_.emplace(path, std::move(entry));
  return result;
}

int OpenedPaths::fd(const std::string& path) const {
  auto it = entries_.find(path);
  return it == entries_.end() ? -1 : it->second.fd.get();
}

}  // namespace oarbank
