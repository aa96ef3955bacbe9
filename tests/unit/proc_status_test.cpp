#include "probe/proc_status.hpp"

#include <gtest/gtest.h>

namespace oarbank {
namespace {

TEST(ProcStatus, ParsesTheFieldsTheParentVerifies) {
  const auto status = parse_proc_status(
      "Name:\tpayload\nUid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\n"
      "Groups:\t\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
      "CapEff:\t0000000000000000\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\n"
      "NoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n");
  EXPECT_EQ(status.no_new_privs, 1);
  EXPECT_EQ(status.seccomp, 2);
  EXPECT_EQ(status.cap_eff, 0U);
  EXPECT_EQ(status.cap_bnd, 0x1ffffffffffULL);
  EXPECT_EQ(status.real_uid, 65534U);
  EXPECT_EQ(status.saved_uid, 65534U);
  EXPECT_EQ(status.effective_gid, 65534U);
  EXPECT_EQ(status.groups, "");
}

TEST(ProcStatus, MissingOrGarbledFieldsStayUnset) {
  const auto status = parse_proc_status("NoNewPrivs:\tx\nSeccomp:\nUid:\t1 2\n");
  EXPECT_FALSE(status.no_new_privs.has_value());
  EXPECT_FALSE(status.seccomp.has_value());
  EXPECT_FALSE(status.real_uid.has_value());
  EXPECT_FALSE(status.cap_eff.has_value());
}

}  // namespace
}  // namespace oarbank
