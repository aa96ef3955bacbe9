#include "plan/status_line.hpp"

namespace oarbank {

std::string status_failure_line(int code, std::string_view line) {
  std::string text(line.size() + 16, '\0');
  text.resize(compose_status_line(text.data(), text.size(), code, {line}));
  return text;
}

StatusReport parse_status_channel(std::string_view text) {
  StatusReport report;
  report.exec = text.find(kStatusExecLine.view()) != std::string_view::npos;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    // A failure is "CODE<TAB>LINE" with a code of one to three characters; anything else (the
    // exec line) is not one.
    const auto tab = line.find('\t');
    if (tab == std::string_view::npos || tab == 0 || tab > 3) continue;
    int code = 0;
    for (std::size_t i = 0; i < tab; ++i) {
      if (line[i] < '0' || line[i] > '9') {
        // Not a code: fail closed, with the whole line for the reader.
        report.code = exit_code_for(ErrorKind::StepFailed);
        report.line = std::string(line);
        return report;
      }
      code = code * 10 + (line[i] - '0');
    }
    report.code = code;
    report.line = std::string(line.substr(tab + 1));
    return report;
  }
  return report;
}

}  // namespace oarbank
