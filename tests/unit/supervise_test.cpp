// The pure parts of sandbox-run: module ids and the verification of /proc/<pid>/status. Where
// a leaf goes and the limits it is given: cgroup_leaf_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

#include "apply/policy_file.hpp"
#include "policy/module_id.hpp"
#include "probe/proc_status.hpp"
#include "supervise/exec_verification.hpp"
#include "supervise/module_run.hpp"

namespace oarbank {
namespace {

TEST(ModuleId, AcceptsSafePathComponents) {
  for (const std::string id : {"a", "resize-1.4.2", "job_7f3a", "A0", "run-0123456789abcdef"}) {
    EXPECT_EQ(module_id_problem(id), std::nullopt) << id;
  }
  for (const std::string& id : {std::string(64, 'x')}) {
    EXPECT_EQ(module_id_problem(id), std::nullopt) << id;
  }
}

TEST(ModuleId, RefusesAnythingThatIsNotOnePlainComponent) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "is empty"},           {std::string(65, 'x'), "longer than 64"},
      {".", "starts with"},       {"..", "starts with"},
      {".hidden", "starts with"}, {"-rf", "starts with"},
      {"a/b", "only letters"},    {"a b", "only letters"},
      {"a\nb", "only letters"},   {"caf\xc3\xa9", "only letters"},
      {"supervisor", "reserved"},
  };
  for (const auto& [id, problem] : cases) {
    auto got = module_id_problem(id);
    ASSERT_TRUE(got.has_value()) << id;
    EXPECT_NE(got->find(problem), std::string::npos) << id << ": " << *got;
  }
  EXPECT_EQ(leaf_name_for("job"), "oarbank-job");
}

constexpr const char* kSandboxedStatus =
    "Name:\tprobe\nUid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\n"
    "Groups:\t\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
    "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n"
    "NoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n";

std::string with_line(std::string text, const std::string& key, const std::string& value) {
  auto at = text.find(key + ":\t");
  auto end = text.find('\n', at);
  return text.replace(at, end - at, key + ":\t" + value);
}

TEST(ExecVerification, ASandboxedModulePasses) {
  const ExecExpectation root_launch{65534, 65534, true};
  EXPECT_EQ(exec_verification_problem(parse_proc_status(kSandboxedStatus), root_launch),
            std::nullopt);
}

TEST(ExecVerification, EachMissingStepIsNamedByItsField) {
  const ExecExpectation root_launch{65534, 65534, true};
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"NoNewPrivs", "0", "NoNewPrivs: 0 (expected 1)"},
      {"Seccomp", "0", "Seccomp: 0 (expected 2)"},
      {"Seccomp", "1", "Seccomp: 1 (expected 2)"},  // strict mode is not the launcher's filter
      {"Uid", "0\t0\t0\t0", "Uid: 0 0 0 0 (expected 65534)"},
      {"Uid", "65534\t65534\t0\t65534", "Uid: 65534 65534 0 65534 (expected 65534)"},
      {"Gid", "0\t0\t0\t0", "Gid: 0 0 (expected 65534)"},
      {"CapEff", "000001ffffffffff", "CapEff: 000001ffffffffff (expected 0)"},
      {"CapBnd", "000001ffffffffff", "CapBnd: 000001ffffffffff (expected 0)"},
      {"CapAmb", "0000000000000400", "CapAmb: 0000000000000400 (expected 0)"},
      {"Groups", "0 4", "Groups: 0 4 (expected none)"},
  };
  for (const auto& [key, value, problem] : cases) {
    auto got = exec_verification_problem(parse_proc_status(with_line(kSandboxedStatus, key, value)),
                                         root_launch);
    EXPECT_EQ(got.value_or("(passed)"), problem) << key << "=" << value;
  }
}

// Seccomp 3 (SECCOMP_MODE_DEAD): a filter's kill is under way, so a filter was applied; the
// module dies of SIGSYS, and the run says so rather than "verification failed".
TEST(ExecVerification, AModuleTheFilterIsKillingPasses) {
  const ExecExpectation root_launch{65534, 65534, true};
  EXPECT_EQ(exec_verification_problem(
                parse_proc_status(with_line(kSandboxedStatus, "Seccomp", "3")), root_launch),
            std::nullopt);
}

TEST(ExecVerification, TheLaunchersFilterMustStackOnWhatSandboxRunInherited) {
  ExecExpectation in_a_container{65534, 65534, true};
  in_a_container.inherited_seccomp_filters = 1;
  // One filter: only the container's. Two: the launcher's on top.
  EXPECT_EQ(
      exec_verification_problem(parse_proc_status(kSandboxedStatus), in_a_container).value_or(""),
      "Seccomp_filters: 1 (expected more than the 1 sandbox-run has)");
  EXPECT_EQ(
      exec_verification_problem(
          parse_proc_status(with_line(kSandboxedStatus, "Seccomp_filters", "2")), in_a_container),
      std::nullopt);
}

TEST(ExecVerification, AMissingFieldFailsClosed) {
  const ExecExpectation root_launch{65534, 65534, true};
  EXPECT_EQ(exec_verification_problem(parse_proc_status(""), root_launch).value_or(""),
            "NoNewPrivs: missing (expected 1)");
  std::string no_seccomp = kSandboxedStatus;
  no_seccomp.erase(no_seccomp.find("Seccomp:\t2\n"), 11);
  EXPECT_EQ(exec_verification_problem(parse_proc_status(no_seccomp), root_launch).value_or(""),
            "Seccomp: missing (expected 2)");
}

TEST(ExecVerification, AnUnprivilegedLaunchKeepsItsBoundingSetAndGroups) {
  const ExecExpectation user_launch{1000, 1000, false};
  std::string status = with_line(kSandboxedStatus, "Uid", "1000\t1000\t1000\t1000");
  status = with_line(status, "Gid", "1000\t1000\t1000\t1000");
  status = with_line(status, "CapBnd", "000001ffffffffff");
  status = with_line(status, "Groups", "27 1000");
  EXPECT_EQ(exec_verification_problem(parse_proc_status(status), user_launch), std::nullopt);
  EXPECT_EQ(exec_verification_problem(
                parse_proc_status(with_line(status, "CapEff", "0000000000000001")), user_launch)
                .value_or(""),
            "CapEff: 0000000000000001 (expected 0)");
}

// path_forms' one-openat2 way for a path through no link must give what realpath's way gives
// (issue 11: it replaced a readlink per component); a link, a missing tail, a relative or
// unnormalized path still go realpath's way.
TEST(PathForms, ThePlainPathIsItsOwnFormAndALinkIsResolved) {
  char pattern[] = "/tmp/oarbank-path-forms-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  ASSERT_EQ(::mkdir((dir + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("real", (dir + "/link").c_str()), 0);
  ASSERT_EQ(::symlink(dir.c_str(), (dir + "/loop-free").c_str()), 0);
  auto realpath_form = [](const std::string& path) {
    char* real = ::realpath(path.c_str(), nullptr);
    std::string out = real != nullptr ? real : "";
    std::free(real);
    return out;
  };
  // /tmp itself may be a link on some nodes: compare with realpath, not with the literal.
  const std::string real_dir = realpath_form(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir + "/real", real_dir + "/real"},
      {dir + "/link", real_dir + "/real"},
      {dir + "/link/missing/deeper", real_dir + "/real/missing/deeper"},
      {dir + "/real/missing", real_dir + "/real/missing"},
      {dir + "/loop-free/real", real_dir + "/real"},
      {dir + "//real/./", real_dir + "/real"},
      {dir + "/link/../real", real_dir + "/real"},
      {"/", "/"},
      {"/proc/self", realpath_form("/proc/self")},
  };
  for (const auto& [path, resolved] : cases) {
    const auto forms = path_forms(path);
    ASSERT_EQ(forms.size(), 2U) << path;
    EXPECT_EQ(forms[0], path);
    EXPECT_EQ(forms[1], resolved) << path;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace oarbank
