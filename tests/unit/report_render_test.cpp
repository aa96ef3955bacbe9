// Issue 11: the report's three renderings (table, JSON, NFD labels) from hand-made
// KernelFeatures, every row and every status, on any machine.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "report/report.hpp"

namespace oarbank {
namespace {

// A node where everything the table can enforce is enforced: Landlock ABI 7, root, network
// namespaces, a GPU, a delegated cgroup with every controller.
KernelFeatures full_node() {
  KernelFeatures f;
  f.kernel_release = "6.18.0-test";
  f.landlock = LandlockState::Present;
  f.landlock_abi = 7;
  f.seccomp_filter = true;
  f.seccomp_user_notif = true;
  f.audit_enabled = 1;
  f.running_as_root = true;
  f.mount_admin = true;
  f.gpu_device_nodes = {"/dev/dri/card0", "/dev/kfd"};
  f.cgroup.probed = true;
  f.cgroup.mounted = true;
  f.cgroup.mount_point = "/sys/fs/cgroup";
  f.cgroup.own_cgroup = "/system.slice/oarbank-agent.service";
  f.cgroup.parent = "/sys/fs/cgroup/system.slice/oarbank-agent.service";
  f.cgroup.parent_writable = true;
  f.cgroup.delegated = true;
  f.cgroup.controllers = {"cpu", "memory", "pids"};
  f.cgroup.kill_file = true;
  f.cgroup.freeze_file = true;
  f.network_namespaces_probed = true;
  f.network_namespaces = true;
  f.ipc_namespaces = true;
  return f;
}

// Unprivileged on Landlock ABI 4 without cgroup2 or a GPU, accepting port-only egress.
KernelFeatures user_node() {
  KernelFeatures f = full_node();
  f.landlock_abi = 4;
  f.running_as_root = false;
  f.gpu_device_nodes.clear();
  f.cgroup = {};
  f.cgroup.probed = true;
  f.network_namespaces = false;
  return f;
}

NodeConfig port_only_config() {
  NodeConfig config;
  config.accept_port_only_egress = true;
  return config;
}

std::map<std::string, std::string> statuses(const Report& report) {
  std::map<std::string, std::string> out;
  const auto report_json = report_to_json(report);
  for (const auto& row : report_json["rows"]) {
    out[row["row"].get<std::string>()] = row["status"].get<std::string>();
  }
  return out;
}

TEST(ReportRender, EveryRowAndEveryStatusOnAFullNode) {
  const auto got = statuses(make_report(full_node(), NodeConfig{}));
  const std::map<std::string, std::string> expected{
      {"filesystem", "enforced"},
      {"net.egress-allowlist", "enforced"},
      {"ipc", "enforced"},
      {"net.egress-any", "unavailable"},
      {"stat-hiding", "not promised"},
      {"devices.gpu", "enforced"},
      {"setid-files", "enforced"},
      {"container.cgroup", "enforced"},
      {"limit.cpu", "enforced"},
      {"limit.memory", "enforced"},
      {"limit.pids", "enforced"},
      {"egress.netns", "enforced"},
      {"world.ipc", "enforced"},
      {"world.net", "enforced"},
      {"world.process-groups", "enforced"},
      {"user.own", "enforced"},
      {"mounts.shm", "enforced"},
      {"mounts.tmp", "enforced"},
      {"mounts.noexec", "enforced"},
      {"mounts.proc", "enforced"},
      {"mounts.pts", "enforced"},
      {"known-limit.exec-writable", "not promised"},
      {"known-limit.metadata", "not promised"},
      {"known-limit.broker-sockets", "not promised"},
      {"denials.syscalls", "enforced"},
      {"denials.filesystem", "enforced"},
      {"denials.network", "enforced"},
  };
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got.size(), capability_table().size());
}

TEST(ReportRender, PortOnlyAndUnavailableOnAnUnprivilegedNode) {
  const auto got = statuses(make_report(user_node(), port_only_config()));
  EXPECT_EQ(got.at("filesystem"), "enforced");
  EXPECT_EQ(got.at("net.egress-allowlist"), "port only");
  EXPECT_EQ(got.at("ipc"), "unavailable");
  EXPECT_EQ(got.at("devices.gpu"), "unavailable");
  EXPECT_EQ(got.at("container.cgroup"), "unavailable");
  EXPECT_EQ(got.at("limit.cpu"), "unavailable");
  EXPECT_EQ(got.at("egress.netns"), "unavailable");
  EXPECT_EQ(got.at("denials.filesystem"), "unavailable");  // ABI 4, and not root
  // Issue 12: the module's world is made by a root sandbox-run alone.
  EXPECT_EQ(got.at("world.ipc"), "unavailable");
  EXPECT_EQ(got.at("world.net"), "unavailable");
  EXPECT_EQ(got.at("world.process-groups"), "unavailable");
  // Issue 12: unprivileged, the module runs on the node's mounts.
  for (const char* row :
       {"mounts.shm", "mounts.tmp", "mounts.noexec", "mounts.proc", "mounts.pts"}) {
    EXPECT_EQ(got.at(row), "unavailable") << row;
  }
  EXPECT_EQ(got.at("user.own"), "unavailable");  // issue 12: not root, no user of its own
}

// Issue 12: a node that turns the module users off says so, naming the one user they share.
// Review of issue 12: a node with module_world false does not report the world's rows.
TEST(ReportRender, TheWorldTurnedOffByTheNodeIsUnavailable) {
  NodeConfig config;
  config.module_world = false;
  const auto report_json = report_to_json(make_report(full_node(), config));
  int seen = 0;
  for (const auto& row : report_json["rows"]) {
    const auto id = row["row"].get<std::string>();
    if (id.rfind("world.", 0) != 0) continue;
    ++seen;
    EXPECT_EQ(row["status"], "unavailable") << id;
    EXPECT_NE(row["reason"].get<std::string>().find("module_world: false"), std::string::npos)
        << row.dump();
  }
  EXPECT_EQ(seen, 3);
}

TEST(ReportRender, OwnUserOffByTheNodeNamesModuleUser) {
  NodeConfig config;
  config.module_users.reset();
  const auto report_json = report_to_json(make_report(full_node(), config));
  for (const auto& row : report_json["rows"]) {
    if (row["row"] != "user.own") continue;
    EXPECT_EQ(row["status"], "unavailable");
    EXPECT_NE(row["reason"].get<std::string>().find("module_users is null"), std::string::npos)
        << row.dump();
    return;
  }
  FAIL() << "no user.own row";
}

TEST(ReportRender, TheModulesWorldSaysWhyItIsNotMade) {
  // Root, but IPC namespaces cannot be made, and no cgroup v2 container: the process group.
  KernelFeatures f = full_node();
  f.ipc_namespaces = false;
  f.cgroup = {};
  f.cgroup.probed = true;
  const Report report = make_report(f, NodeConfig{});
  for (const auto& row : report.rows) {
    if (row.row == CapabilityRow::WorldIpc) {
      EXPECT_EQ(row.status, CapabilityStatus::Unavailable);
      EXPECT_NE(row.reason.find("cannot create IPC namespaces"), std::string::npos) << row.reason;
    }
    if (row.row == CapabilityRow::WorldNetwork) {
      EXPECT_EQ(row.status, CapabilityStatus::Enforced);
    }
    if (row.row == CapabilityRow::WorldProcessGroups) {
      EXPECT_EQ(row.status, CapabilityStatus::Unavailable);
      EXPECT_NE(row.reason.find("setsid and setpgid stay refused"), std::string::npos)
          << row.reason;
    }
  }
}

TEST(ReportRender, NfdIsOneLabelPerRowInTableOrderThenTheAbi) {
  Report report = make_report(full_node(), NodeConfig{});
  const std::string p = kNfdPrefix;
  EXPECT_EQ(
      report_to_nfd(report),
      "# oarbank-agent sandbox-report --format nfd: what this node's sandbox enforces\n" + p +
          "filesystem=enforced\n" + p + "net.egress-allowlist=enforced\n" + p + "ipc=enforced\n" +
          p + "net.egress-any=unavailable\n" + p + "stat-hiding=not-promised\n" + p +
          "devices.gpu=enforced\n" + p + "setid-files=enforced\n" + p +
          "container.cgroup=enforced\n" + p + "limit.cpu=enforced\n" + p +
          "limit.memory=enforced\n" + p + "limit.pids=enforced\n" + p + "egress.netns=enforced\n" +
          p + "world.ipc=enforced\n" + p + "world.net=enforced\n" + p +
          "world.process-groups=enforced\n" + p + "user.own=enforced\n" + p +
          "mounts.shm=enforced\n" + p + "mounts.tmp=enforced\n" + p + "mounts.noexec=enforced\n" +
          p + "mounts.proc=enforced\n" + p + "mounts.pts=enforced\n" + p +
          "known-limit.exec-writable=not-promised\n" + p + "known-limit.metadata=not-promised\n" +
          p + "known-limit.broker-sockets=not-promised\n" + p + "denials.syscalls=enforced\n" + p +
          "denials.filesystem=enforced\n" + p + "denials.network=enforced\n" + p +
          "landlock-abi=7\n");
  // Port only and a failed verification are label values too; the ABI is the one used.
  report = make_report(user_node(), port_only_config());
  report.verifications.push_back({CapabilityRow::Filesystem, false, "a write got through"});
  const std::string nfd = report_to_nfd(report);
  EXPECT_NE(nfd.find(p + "net.egress-allowlist=port-only\n"), std::string::npos) << nfd;
  EXPECT_NE(nfd.find(p + "filesystem=failed\n"), std::string::npos) << nfd;
  EXPECT_NE(nfd.find(p + "landlock-abi=4\n"), std::string::npos) << nfd;
  NodeConfig capped;
  capped.landlock_abi_max = 3;
  EXPECT_NE(report_to_nfd(make_report(full_node(), capped)).find(p + "landlock-abi=3\n"),
            std::string::npos);
}

TEST(ReportRender, JsonCarriesEachRowsIdTitleReasonAndVerification) {
  Report report = make_report(full_node(), NodeConfig{});
  report.verifications.push_back({CapabilityRow::Filesystem, true, "refused: EACCES"});
  report.verifications.push_back({CapabilityRow::Ipc, false, "reached a socket outside"});
  const auto report_json = report_to_json(report);
  ASSERT_EQ(report_json["rows"].size(), capability_table().size());
  for (std::size_t i = 0; i < report_json["rows"].size(); ++i) {
    const auto& row = report_json["rows"][i];
    const auto& entry = capability_table()[i];
    EXPECT_EQ(row["row"], std::string(entry.key));
    EXPECT_EQ(row["title"], std::string(entry.title));
    EXPECT_FALSE(row["reason"].get<std::string>().empty()) << entry.key;
    EXPECT_EQ(row.contains("verified"),
              entry.row == CapabilityRow::Filesystem || entry.row == CapabilityRow::Ipc)
        << entry.key;
  }
  EXPECT_EQ(report_json["rows"][0]["status"], "enforced");
  EXPECT_EQ(report_json["rows"][0]["verified"], true);
  EXPECT_EQ(report_json["rows"][0]["verification"], "refused: EACCES");
  EXPECT_EQ(report_json["rows"][2]["status"], "failed");
  EXPECT_EQ(report_json["rows"][2]["verified"], false);
  EXPECT_TRUE(any_verification_failed(report));

  const auto& facts = report_json["facts"];
  EXPECT_EQ(facts["kernel_release"], "6.18.0-test");
  EXPECT_EQ(facts["landlock_abi"], 7);
  EXPECT_EQ(facts["landlock_abi_used"], 7);
  EXPECT_TRUE(facts["landlock_abi_max"].is_null());
  EXPECT_EQ(facts["hard_limits"], false);
  EXPECT_EQ(facts["network_namespaces"], true);
  EXPECT_EQ(facts["cgroup"]["leaf_parent"], "/sys/fs/cgroup/system.slice/oarbank-agent.service");
  EXPECT_EQ(facts["cgroup"]["controllers"], nlohmann::json({"cpu", "memory", "pids"}));
  EXPECT_EQ(facts["cgroup"]["delegated_by_systemd"], true);

  KernelFeatures unprobed = user_node();
  unprobed.cgroup.probed = false;
  unprobed.network_namespaces_probed = false;
  const auto bare = report_to_json(make_report(unprobed, NodeConfig{}));
  EXPECT_TRUE(bare["facts"]["cgroup"].is_null());
  EXPECT_TRUE(bare["facts"]["network_namespaces"].is_null());
  EXPECT_FALSE(any_verification_failed(make_report(unprobed, NodeConfig{})));
}

TEST(ReportRender, TableShowsEachRowItsReasonAndTheFacts) {
  Report report = make_report(full_node(), NodeConfig{});
  report.verifications.push_back({CapabilityRow::Ipc, false, "reached a socket outside"});
  const std::string table = report_to_table(report);
  // The id column is as wide as the longest id (known-limit.broker-sockets, 26).
  EXPECT_EQ(table.rfind("ROW                         STATUS\n    capability: reason\n", 0), 0U)
      << table;
  // The capability and its reason wrap at 80 columns, below the row's line.
  EXPECT_NE(table.find("\nfilesystem                  enforced\n    filesystem, net.none, "
                       "exec_writable deny, GPU: Landlock ABI 7 (needs 3) and\n"
                       "    seccomp filters\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("\nipc                         failed\n"), std::string::npos) << table;
  EXPECT_NE(table.find("    (FAILED) reached a socket outside\n"), std::string::npos) << table;
  EXPECT_NE(table.find("\nstat-hiding                 not promised\n"), std::string::npos);
  EXPECT_NE(table.find("\nnet.egress-any              unavailable\n"), std::string::npos);
  EXPECT_NE(table.find("\nFacts:\n  kernel release     6.18.0-test\n"
                       "  Landlock           present (ABI 7; used: ABI 7)\n"
                       "  seccomp filters    yes (user notification: yes)\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("  cgroup controllers cpu memory pids\n"), std::string::npos) << table;
  EXPECT_NE(table.find("  network namespaces can create\n"), std::string::npos) << table;
  EXPECT_NE(table.find("  GPU device nodes   /dev/dri/card0 /dev/kfd\n"), std::string::npos);

  NodeConfig capped;
  capped.landlock_abi_max = 5;
  const std::string user = report_to_table(make_report(user_node(), capped));
  EXPECT_NE(user.find("  Landlock           present (ABI 4; used: ABI 4, capped at 5 by the "
                      "node)\n"),
            std::string::npos)
      << user;
  EXPECT_NE(user.find("  cgroup2            not mounted\n"), std::string::npos) << user;
  EXPECT_NE(user.find("  network namespaces cannot create\n"), std::string::npos) << user;
  EXPECT_NE(user.find("  GPU device nodes   (none)\n"), std::string::npos) << user;
  EXPECT_NE(user.find("\nnet.egress-allowlist        unavailable\n"), std::string::npos) << user;
}

}  // namespace
}  // namespace oarbank
