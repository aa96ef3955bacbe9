// Issue 16: sandbox-report's table fits an 80-column terminal and names each row by its id,
// the key --json and the NFD file use.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "report/report.hpp"

namespace oarbank {
namespace {

// Facts that make long lines: every reason, a long cgroup path, many GPU nodes, a verified
// and a failed row.
Report long_report(int abi) {
  KernelFeatures features;
  features.kernel_release = "6.18.44-a-long-release-name-of-a-distribution-kernel-build";
  features.landlock = abi > 0 ? LandlockState::Present : LandlockState::NotBuilt;
  features.landlock_abi = abi;
  features.seccomp_filter = true;
  features.running_as_root = abi % 2 == 0;
  for (int i = 0; i < 12; ++i)
    features.gpu_device_nodes.push_back("/dev/nvidia" + std::to_string(i));
  features.cgroup.probed = true;
  features.cgroup.mounted = true;
  features.cgroup.mount_point = "/sys/fs/cgroup/unified";
  features.cgroup.own_cgroup = "/system.slice/oarbank-agent@a-module-with-a-long-name.service";
  features.cgroup.parent =
      "/sys/fs/cgroup/unified/system.slice/oarbank-agent@a-module-with-a-long-name.service/"
      "modules-without-a-single-space-in-their-very-long-path";
  features.cgroup.parent_writable = true;
  features.cgroup.delegated = true;
  features.cgroup.controllers = {"cpu", "memory", "pids"};
  features.cgroup.kill_file = true;
  features.network_namespaces_probed = true;
  features.network_namespaces = abi % 2 == 0;
  NodeConfig config;
  Report report = make_report(features, config);
  report.verifications.push_back(
      {CapabilityRow::Filesystem, true, "a write outside was refused: EACCES"});
  report.verifications.push_back(
      {CapabilityRow::Ipc, false, "the probe reached an abstract unix socket outside its domain"});
  return report;
}

TEST(ReportTable, EveryLineFitsEightyColumnsAndEachRowIdIsShown) {
  for (int abi = 0; abi <= 7; ++abi) {
    const Report report = long_report(abi);
    const std::string table = report_to_table(report);
    std::istringstream lines(table);
    std::string line;
    while (std::getline(lines, line)) {
      EXPECT_LE(line.size(), 80U) << "ABI " << abi << ": " << line;
    }
    for (const auto& verdict : report.rows) {
      // The id starts its row's line, followed by the status.
      const std::string key(row_key(verdict.row));
      EXPECT_NE(table.find("\n" + key + " "), std::string::npos) << "ABI " << abi << ": " << key;
    }
    EXPECT_NE(table.find("(FAILED)"), std::string::npos);
    EXPECT_NE(table.find("(verified)"), std::string::npos);
  }
}

TEST(ReportTable, WrapSplitsAtSpacesAndBreaksAWordLongerThanALine) {
  EXPECT_EQ(wrap_text("aa bb cc", "> ", "  ", 7), "> aa bb\n  cc\n");
  EXPECT_EQ(wrap_text("abcdefghij", "", "", 4), "abcd\nefgh\nij\n");
  EXPECT_EQ(wrap_text("", "x ", "  ", 10), "x \n");
  EXPECT_EQ(wrap_text("one  two", "", "", 80), "one two\n");
}

}  // namespace
}  // namespace oarbank
