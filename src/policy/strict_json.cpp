#include "policy/strict_json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "sys/error.hpp"
#include "sys/trusted_input.hpp"
#include "sys/unique_fd.hpp"

namespace oarbank {
namespace {

// Throws out of the parser callback to abort parsing at once.
struct Abort {
  StrictJsonError error;
};

// Tracks the pointer of the value being parsed and the keys seen in each open object.
class StrictCallback {
 public:
  explicit StrictCallback(int max_depth) : max_depth_(max_depth) {}

  bool operator()(nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start: {
        if (static_cast<int>(frames_.size()) >= max_depth_) {
          throw Abort{{current_pointer(), fmt_depth()}};
        }
        Frame frame;
        frame.is_object = event == E::object_start;
        frame.pointer = current_pointer();
        frames_.push_back(std::move(frame));
        break;
      }
      case E::key: {
        auto& frame = frames_.back();
        const auto& key = parsed.get_ref<const std::string&>();
        for (const auto& seen : frame.keys) {
          if (seen == key) {
            throw Abort{{json_pointer_append(frame.pointer, key), "duplicate key"}};
          }
        }
        frame.keys.push_back(key);
        frame.current_key = key;
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        after_value();
        break;
      case E::value:
        after_value();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_object = false;
    std::string pointer;
    std::vector<std::string> keys;
    std::string current_key;
    std::size_t next_index = 0;
  };

  [[nodiscard]] std::string current_pointer() const {
    if (frames_.empty()) return "";
    const auto& frame = frames_.back();
    return frame.is_object ? json_pointer_append(frame.pointer, frame.current_key)
                           : json_pointer_append(frame.pointer, frame.next_index);
  }
  void after_value() {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().next_index;
  }
  [[nodiscard]] std::string fmt_depth() const {
    return "nested deeper than " + std::to_string(max_depth_) + " levels";
  }

  int max_depth_;
  std::vector<Frame> frames_;
};

// Issue 16: what authors most often write that JSON does not allow, looked for where the
// parser stopped (`stop`: the bytes it read). nlohmann reports a comment as "invalid literal"
// and a trailing comma as an unexpected '}', both at a column after the real place. Returns
// the problem with its line and column (1-based, in bytes), or nothing.
std::optional<std::string> familiar_mistake(std::string_view text, std::size_t stop,
                                            bool comments_allowed) {
  std::size_t line = 1;
  std::size_t column = 0;
  bool in_string = false;
  bool escaped = false;
  // Where the last ',' with only blanks after it is (line 0: none).
  std::size_t comma_line = 0;
  std::size_t comma_column = 0;
  const std::size_t end = std::min(stop, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      column = 0;
    } else {
      ++column;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '/' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*')) {
      if (!comments_allowed) {
        return "a comment at line " + std::to_string(line) + ", column " + std::to_string(column) +
               ": JSON has no comments";
      }
      // Skipped as the parser skips it; what follows the comment still counts.
      const bool block = text[i + 1] == '*';
      const auto close = block ? text.find("*/", i + 2) : text.find('\n', i + 2);
      if (close == std::string_view::npos) return std::nullopt;
      const std::size_t last = block ? close + 1 : close - 1;
      for (std::size_t j = i + 1; j <= last; ++j) {
        if (text[j] == '\n') {
          ++line;
          column = 0;
        } else {
          ++column;
        }
      }
      i = last;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if ((c == '}' || c == ']') && comma_line != 0) {
      return "a trailing comma at line " + std::to_string(comma_line) + ", column " +
             std::to_string(comma_column) + ": JSON allows no comma after the last " +
             (c == '}' ? "member of an object" : "element of an array");
    }
    if (c == ',') {
      comma_line = line;
      comma_column = column;
    } else {
      comma_line = 0;
      if (c == '"') in_string = true;
    }
  }
  return std::nullopt;
}

}  // namespace

bool parse_strict_json(std::string_view text, std::size_t max_bytes, int max_depth,
                       nlohmann::json& out, StrictJsonError& error, JsonComments comments) {
  if (text.size() > max_bytes) {
    error = {"", "document is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                     std::to_string(max_bytes)};
    return false;
  }
  // nlohmann's lexer takes a NUL byte for the end of the input, so "{...}\0anything" would
  // parse as "{...}". No JSON text contains a raw NUL byte: refuse it here.
  if (auto nul = text.find('\0'); nul != std::string_view::npos) {
    error = {"", "malformed JSON: a NUL byte at offset " + std::to_string(nul)};
    return false;
  }
  StrictCallback callback(max_depth);
  try {
    out = nlohmann::json::parse(
        text.begin(), text.end(),
        [&callback](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          (void)depth;
          return callback(event, parsed);
        },
        /*allow_exceptions=*/true,
        /*ignore_comments=*/comments == JsonComments::Allow);
  } catch (const Abort& abort) {
    error = abort.error;
    return false;
  } catch (const nlohmann::json::parse_error& e) {
    if (auto mistake = familiar_mistake(text, e.byte, comments == JsonComments::Allow)) {
      error = {"", "malformed JSON: " + *mistake};
      return false;
    }
    std::string message = e.what();
    if (auto pos = message.find("] "); pos != std::string::npos) message.erase(0, pos + 2);
    error = {"", "malformed JSON: " + message};
    return false;
  } catch (const nlohmann::json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e400") is out_of_range 406.
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    std::string message = e.what();
    if (auto pos = message.find("] "); pos != std::string::npos) message.erase(0, pos + 2);
    error = {"", "malformed JSON: " + message};
    return false;
  }
  return true;
}

bool read_small_fd(int fd, const std::string& name, std::size_t max_bytes, std::string& out,
                   std::string& problem) {
  out.clear();
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      problem = "cannot read " + name + ": " + errno_text(errno);
      return false;
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      problem = name + " is larger than the limit of " + std::to_string(max_bytes) + " bytes";
      return false;
    }
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return true;
}

bool read_small_file(const std::string& path, std::size_t max_bytes, std::string& out,
                     std::string& problem) {
  // O_NONBLOCK: a FIFO named as a policy must not hang the launcher (it is refused below as
  // not a regular file); on a regular file the flag changes nothing.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) {
    problem = "cannot open " + path + ": " + errno_text(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = path + " is not a regular file";
    return false;
  }
  if (auto untrusted = untrusted_input_problem(path, fd.get(), st)) {
    problem = *untrusted;
    return false;
  }
  return read_small_fd(fd.get(), path, max_bytes, out, problem);
}

std::string json_pointer_append(const std::string& base, std::string_view key) {
  std::string result = base;
  result += '/';
  for (char c : key) {
    if (c == '~') {
      result += "~0";
    } else if (c == '/') {
      result += "~1";
    } else {
      result += c;
    }
  }
  return result;
}

std::string json_pointer_append(const std::string& base, std::size_t index) {
  return base + "/" + std::to_string(index);
}

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string_view json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "an integer";
    case nlohmann::json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

}  // namespace oarbank
