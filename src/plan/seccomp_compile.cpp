#include "plan/seccomp_compile.hpp"

#include <fmt/format.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include "plan/seccomp_compact.hpp"

namespace oarbank::seccomp {
namespace {

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

scmp_arg_cmp to_libseccomp(const ArgCheck& check) {
  switch (check.op) {
    case Compare::Equal:
      return SCMP_CMP(check.arg, SCMP_CMP_EQ, check.value);
    case Compare::Greater:
      return SCMP_CMP(check.arg, SCMP_CMP_GT, check.value);
    case Compare::MaskedEqual:
      return SCMP_CMP(check.arg, SCMP_CMP_MASKED_EQ, check.mask, check.value);
  }
  throw std::logic_error("unknown comparison");
}

}  // namespace

int syscall_number(const Rule& rule) {
  int nr = seccomp_syscall_resolve_name(rule.syscall.c_str());
  if (nr == __NR_SCMP_ERROR) {
#if defined(__x86_64__)
    nr = rule.syscall_number_x86_64;
#endif
  }
  return nr;
}

namespace {

// The ceiling: syscall numbers above the highest reviewed one answer ENOSYS. Three classic
// BPF instructions put in front of libseccomp's program; its jumps are relative, so they
// stay valid. The architecture check that follows still kills foreign ABIs (i386's int 0x80).
std::vector<sock_filter> ceiling_prefix() {
#if defined(__x86_64__)
  return {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, kHighestReviewedSyscallX86_64, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
  };
#else
  return {};
#endif
}

// The refusals libseccomp cannot express (Allowlist32 in seccomp_rules.hpp), one block each,
// put after the ceiling and before libseccomp's program:
//   ld arch; jne x86_64 -> next block; ld nr; jne NR -> next block; ld low 32 bits of argN;
//   jeq allowed[0] -> next block; ...; ret ERRNO
// The architecture is checked first so that a foreign ABI's call with the same number still
// reaches libseccomp's check, which kills it. Classic BPF loads 32-bit words: on little-endian
// x86-64 the low half of args[N] is the word at its offset, the half the kernel reads.
std::vector<sock_filter> allowlist_prefix(Refusal refusal) {
  std::vector<sock_filter> out;
#if defined(__x86_64__)
  for (const auto& list : allowlists32()) {
    const int nr = list.syscall_number_x86_64;
    if (nr < 0 || list.arg > 5 || list.allowed.empty() || list.allowed.size() > 200) {
      throw std::runtime_error(fmt::format("bad 32-bit allowlist for {}", list.syscall));
    }
    const std::size_t n = list.allowed.size();
    const std::size_t end = 6 + n;  // index of the first instruction after this block
    auto to_end = [&](std::size_t index) { return static_cast<std::uint8_t>(end - (index + 1)); };
    out.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
    out.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, to_end(1)));
    out.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
    out.push_back(
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, to_end(3)));
    out.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                           static_cast<std::uint32_t>(offsetof(seccomp_data, args) +
                                                      sizeof(std::uint64_t) * list.arg)));
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, list.allowed[i], to_end(5 + i), 0));
    }
    out.push_back(BPF_STMT(BPF_RET | BPF_K,
                           refusal == Refusal::Notify && notified(list.errno_value)
                               ? SECCOMP_RET_USER_NOTIF
                               : SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(list.errno_value) &
                                                      SECCOMP_RET_DATA)));
  }
#endif
  return out;
}

}  // namespace

std::vector<sock_filter> compile(const FilterVariant& variant, Refusal refusal) {
  return compile_rules(compact_rules(rules_for(variant)), refusal);
}

std::vector<sock_filter> compile_rules(const std::vector<Rule>& rules, Refusal refusal) {
  std::unique_ptr<void, CtxDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) throw std::runtime_error("seccomp_init failed");
  // A syscall from another ABI of this CPU (int 0x80 from a 64-bit process) kills the process:
  // the rules below are written for the native ABI's numbers.
  if (seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0 ||
      // The launcher sets no_new_privs itself, as its own step.
      seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0) != 0 ||
      // A binary search over syscall numbers instead of a linear chain.
      seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2) != 0) {
    throw std::runtime_error("seccomp_attr_set failed");
  }
  for (const auto& rule : rules) {
    int nr = syscall_number(rule);
    if (nr < 0) {
      throw std::runtime_error(fmt::format("libseccomp does not know syscall {}", rule.syscall));
    }
    std::vector<scmp_arg_cmp> args;
    for (const auto& check : rule.args) args.push_back(to_libseccomp(check));
    const std::uint32_t action = refusal == Refusal::Notify && notified(rule)
                                     ? SCMP_ACT_NOTIFY
                                     : SCMP_ACT_ERRNO(static_cast<std::uint32_t>(rule.errno_value));
    int rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(args.size()),
                                    args.data());
    if (rc != 0) {
      throw std::runtime_error(
          fmt::format("libseccomp refused the rule for {}: {}", rule.syscall, rc));
    }
  }
  // Export through a pipe-free path: seccomp_export_bpf writes to a file descriptor.
  FILE* memory = tmpfile();
  if (memory == nullptr) throw std::runtime_error("tmpfile failed");
  std::unique_ptr<FILE, int (*)(FILE*)> file(memory, fclose);
  if (seccomp_export_bpf(ctx.get(), fileno(file.get())) != 0) {
    throw std::runtime_error("seccomp_export_bpf failed");
  }
  std::vector<sock_filter> program = ceiling_prefix();
  for (const auto& instruction : allowlist_prefix(refusal)) program.push_back(instruction);
  rewind(file.get());
  sock_filter instruction{};
  while (fread(&instruction, sizeof instruction, 1, file.get()) == 1)
    program.push_back(instruction);
  if (program.size() > BPF_MAXINSNS) throw std::runtime_error("filter longer than BPF_MAXINSNS");
  return program;
}

}  // namespace oarbank::seccomp
