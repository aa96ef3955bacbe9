// A denial: one kind of refusal the sandbox made during a run, as sandbox-run reports it
// (--result's "denials", the summary on stderr; docs/denials.md). Pure data and its forms.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace oarbank {

struct Denial {
  // "seccomp", "landlock-fs", "landlock-net", "landlock-scope", "proxy".
  std::string mechanism;
  std::string operation;   // the syscall ("listen"), the Landlock right ("fs.write_file")
  std::string object;      // what it was tried on, decoded: "AF_NETLINK SOCK_RAW", a path
  std::string error;       // the errno the module saw ("EPERM"), or the proxy's status
  std::int64_t pid = 0;    // the first process refused (0: not known)
  std::string executable;  // its /proc/PID/exe ("" when not known)
  std::uint64_t count = 1;
  // The policy change that would allow it ("add \"broker\": true"), or "" when no policy can.
  std::string allowed_by;
  // Why it was refused: what the policy lacks, or the rule's reason that no policy lifts.
  std::string reason;
  // allowed_by as a change to the policy's JSON (sandbox-run --learn): {"key": "data", "add":
  // "/srv/cache"} appends to a list, {"key": "broker", "set": true} sets a value; null when no
  // policy can allow it.
  nlohmann::json grant = nullptr;

  // Two records of one denial: the same mechanism, operation, object and executable.
  [[nodiscard]] std::string key() const;
};

// What a run could record, per mechanism, for the result: "recorded", or "unavailable: WHY".
struct DenialDiagnostics {
  std::string syscalls = "unavailable: not asked";
  std::string filesystem = "unavailable: not asked";
  std::string network = "unavailable: not asked";
  std::uint64_t dropped = 0;  // records not kept: the bounded table was full
};

// Every string is valid UTF-8, whatever the module named: a path, an abstract socket's name or
// an executable's is any bytes (the module chooses them), and nlohmann's dump() throws on
// invalid UTF-8, which would leave --result empty and the run's exit 70 instead of the
// module's. Each byte that is not part of valid UTF-8 is written "\xNN", as on stderr; a
// denial whose object needed that has no grant (a JSON policy cannot name those bytes).
nlohmann::json denials_to_json(const std::vector<Denial>& denials);
// TEXT with every byte that is not part of a valid UTF-8 sequence written as "\xNN".
std::string utf8_or_escaped(const std::string& text);
nlohmann::json diagnostics_to_json(const DenialDiagnostics& diagnostics);
// Whether a refusal's LINE names PATH itself, not a part of a longer path (/srv/jobs is not
// named by /srv/jobs/work, nor /data by /srv/data): --learn drops the change a trial that did
// not start names.
bool line_names_path(const std::string& line, const std::string& path);

// Applies a denial's grant to a policy (its JSON): returns the change as one line ("+ \"data\":
// \"/srv/cache\"", "\"broker\": false -> true"), or "" when the policy already has it or the
// grant is null. sandbox-run --learn.
std::string apply_grant(nlohmann::json& policy, const nlohmann::json& grant);

// One line per denial, for sandbox-run's stderr ("refused (seccomp): listen ...").
std::string denial_line(const Denial& denial);

}  // namespace oarbank
