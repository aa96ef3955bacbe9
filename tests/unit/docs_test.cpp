// Issue 11: the docs the capability table makes. docs/report.md's row table and
// docs/kernels.md's per-kernel reports are rendered (report/row_docs.hpp) from the table and,
// for each kernel, from the facts recorded of it below; this test fails when a doc differs
// from what the code renders, and OARBANK_UPDATE_GOLDEN=1 rewrites the generated part (as for
// tests/golden). Whether each real kernel reports what its facts say is tests/vm's check.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "plan/capabilities.hpp"
#include "report/report.hpp"
#include "report/row_docs.hpp"

namespace oarbank {
namespace {

// The qemu guests of tests/vm (run as root, cgroup2 whole at /sys/fs/cgroup, no GPU, no
// auditd), as their sandbox-report --json records them.
KernelFeatures debian_guest(std::string release, LandlockState landlock, int abi) {
  KernelFeatures f;
  f.kernel_release = std::move(release);
  f.landlock = landlock;
  f.landlock_abi = abi;
  f.seccomp_filter = true;
  f.seccomp_user_notif = true;
  f.audit_enabled = 0;
  f.running_as_root = true;
  f.mount_admin = true;
  f.cgroup.probed = true;
  f.cgroup.mounted = true;
  f.cgroup.mount_point = "/sys/fs/cgroup";
  f.cgroup.own_cgroup = "/";
  f.cgroup.parent = "/sys/fs/cgroup";
  f.cgroup.parent_writable = true;
  f.cgroup.controllers = {"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"};
  f.cgroup.kill_file = true;
  f.cgroup.freeze_file = true;
  f.network_namespaces_probed = true;
  f.network_namespaces = true;
  f.ipc_namespaces = true;
  return f;
}

std::vector<RecordedKernel> recorded_kernels() {
  constexpr const char* k612 = "6.12.117+deb12-cloud-amd64";
  std::vector<RecordedKernel> kernels;
  kernels.push_back({"Debian 12, Linux 6.1 (Landlock ABI 2)",
                     "Debian 12 `6.1.0-56-cloud-amd64`",
                     "",
                     debian_guest("6.1.0-56-cloud-amd64", LandlockState::Present, 2),
                     {}});
  kernels.push_back({"Debian 12, Linux 6.12 (Landlock ABI 6)",
                     "Debian 12 `6.12.117+deb12-cloud-amd64`",
                     "",
                     debian_guest(k612, LandlockState::Present, 6),
                     {}});
  kernels.push_back(
      {"Debian 12, Linux 6.12 booted with `lsm=` without `landlock`",
       "the same, booted with `lsm=` without `landlock`",
       "Booted with `lsm=lockdown,yama,loadpin,safesetid,integrity,apparmor,selinux,smack,"
       "tomoyo,bpf,ipe` (its CONFIG_LSM without landlock).",
       debian_guest(k612, LandlockState::Disabled, 0),
       {}});
  KernelFeatures systemd = debian_guest(k612, LandlockState::Present, 6);
  systemd.cgroup.own_cgroup = "/oarbank.slice/oarbank-guest-cmd.service";
  systemd.cgroup.parent = "/sys/fs/cgroup/oarbank.slice/oarbank-guest-cmd.service";
  systemd.cgroup.delegated = true;
  systemd.cgroup.controllers = {"cpuset", "cpu", "io", "memory", "pids"};
  kernels.push_back(
      {"Debian 12, Linux 6.12 under systemd, in a delegated unit of `oarbank.slice`",
       "the same 6.12, booting Debian 12 with systemd, in a delegated unit of `oarbank.slice`",
       "The kernel matrix's systemd guest (`6.12-systemd`, `tests/vm/README.md`): the packaged "
       "agent on a booted Debian 12 with systemd as PID 1, run as `oarbank-agent@` units are, in "
       "`oarbank.slice` with `Delegate=yes`, so the cgroup rows are those `sandbox-run` gets "
       "there. The leaves' parent is the unit's own cgroup, writable and marked delegated by "
       "systemd, with the controllers systemd delegates. The guest also runs `--verify` (exit "
       "0), whose `(verified)` lines name temporary paths and are not shown.",
       systemd,
       {}});
  KernelFeatures host = debian_guest("6.18.44-fc-v669", LandlockState::Present, 7);
  host.audit_enabled = 1;
  host.cgroup.mount_point = "/sys/fs/cgroup/unified";
  host.cgroup.parent = "/sys/fs/cgroup/unified";
  host.cgroup.controllers = {"hugetlb"};
  kernels.push_back(
      {"The development host (Linux 6.18, Landlock ABI 7, hybrid cgroup layout)",
       "the development host `6.18.44`",
       "Its hybrid layout binds cpu, memory and pids to cgroup v1, so the hard-limit rows are "
       "`unavailable` here while the qemu guests, whose cgroup2 is whole, have them `enforced`.",
       host,
       {}});
  return kernels;
}

std::string read_doc(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The generated part NAME of docs/DOC is BODY, or (OARBANK_UPDATE_GOLDEN=1) becomes it.
void check_generated(const std::string& doc, const std::string& name, const std::string& body) {
  const std::string path = std::string(OARBANK_DOCS_DIR) + "/" + doc;
  const std::string text = read_doc(path);
  ASSERT_FALSE(text.empty()) << "cannot read " << path;
  const auto rendered = replace_generated(text, name, body);
  ASSERT_TRUE(rendered) << path << " lacks the markers <!-- BEGIN generated: " << name
                        << " --> and <!-- END generated: " << name << " -->";
  if (const char* update = std::getenv("OARBANK_UPDATE_GOLDEN");
      update != nullptr && *update == '1') {
    std::ofstream(path) << *rendered;
    return;
  }
  if (text == *rendered) return;
  // The first line that differs, not two whole pages.
  std::istringstream have(text);
  std::istringstream want(*rendered);
  std::string have_line;
  std::string want_line;
  int line = 0;
  while (true) {
    ++line;
    const bool more_have = static_cast<bool>(std::getline(have, have_line));
    const bool more_want = static_cast<bool>(std::getline(want, want_line));
    if (!more_have && !more_want) break;
    if (have_line != want_line || more_have != more_want) break;
  }
  ADD_FAILURE() << path << "'s generated part " << name << " differs from what the code renders, "
                << "first at line " << line << ":\n  doc:  " << have_line
                << "\n  code: " << want_line << "\n(if intended, run with OARBANK_UPDATE_GOLDEN=1)";
}

TEST(Docs, ReportRowTableIsTheCapabilityTable) {
  check_generated("report.md", "capability rows", capability_rows_markdown());
}

TEST(Docs, KernelReportsAreTheRendererOnEachKernelsFacts) {
  check_generated("kernels.md", "kernel reports", kernel_reports_markdown(recorded_kernels()));
}

TEST(Docs, EveryRowSaysWhatItNeedsAndWhenAPolicyNeedsIt) {
  for (const auto& entry : capability_table()) {
    SCOPED_TRACE(std::string(entry.key));
    EXPECT_NE(entry.statuses, 0U);
    EXPECT_FALSE(entry.needs.empty() && entry.landlock == landlock::Abi::Unsupported);
    EXPECT_EQ(entry.needed_by == nullptr, entry.needed_when.empty());
  }
  const std::string table = capability_rows_markdown();
  for (const auto& entry : capability_table()) {
    EXPECT_NE(table.find("| `" + std::string(entry.key) + "` |"), std::string::npos) << entry.key;
  }
}

// The statuses the row table lists are the ones each evaluator gives: none it never gives,
// none it gives unlisted, over nodes that reach every branch.
TEST(Docs, EachRowsStatusesAreTheOnesItsEvaluatorGives) {
  std::vector<CapabilityStatusSet> seen(kCapabilityRowCount, 0);
  for (int abi = 0; abi <= 7; ++abi) {
    for (int variant = 0; variant < 64; ++variant) {
      KernelFeatures f =
          debian_guest("test", abi == 0 ? LandlockState::Disabled : LandlockState::Present, abi);
      f.running_as_root = (variant & 1) != 0;
      f.network_namespaces = (variant & 2) != 0;
      f.ipc_namespaces = (variant & 2) != 0;
      f.mount_admin = (variant & 4) != 0;
      if ((variant & 8) != 0) f.gpu_device_nodes = {"/dev/dri"};
      if ((variant & 16) != 0) f.cgroup.controllers.clear();
      if ((variant & 32) != 0) f.cgroup.parent_writable = false;
      f.seccomp_filter = abi != 1;  // ABI 1 stands for a node without filters too
      f.seccomp_user_notif = abi != 1;
      f.audit_enabled = abi % 2;
      for (int c = 0; c < 4; ++c) {
        NodeConfig config;
        config.accept_port_only_egress = (c & 1) != 0;
        if ((c & 2) != 0) {
          config.module_world = false;
          config.module_users.reset();
          config.module_mounts = false;
          config.denial_audit = "off";
        }
        for (const auto& verdict : evaluate_capabilities(f, config)) {
          seen[static_cast<std::size_t>(verdict.row)] |= status_bit(verdict.status);
        }
      }
    }
  }
  for (const auto& entry : capability_table()) {
    EXPECT_EQ(seen[static_cast<std::size_t>(entry.row)], entry.statuses)
        << entry.key << ": the table says " << entry.statuses;
  }
}

TEST(Docs, ReplaceGeneratedKeepsWhatIsAroundTheMarkers) {
  const std::string doc =
      "before\n<!-- BEGIN generated: x (do not edit) -->\nold\n<!-- END generated: x -->\nafter\n";
  EXPECT_EQ(replace_generated(doc, "x", "new\n"),
            "before\n<!-- BEGIN generated: x (do not edit) -->\nnew\n<!-- END generated: x "
            "-->\nafter\n");
  EXPECT_FALSE(replace_generated(doc, "y", "new\n"));
}

}  // namespace
}  // namespace oarbank
