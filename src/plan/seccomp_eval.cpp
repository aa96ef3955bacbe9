#include "plan/seccomp_eval.hpp"

#include <cstring>

namespace oarbank::seccomp {

std::uint32_t evaluate(const sock_filter* program, std::size_t length, const seccomp_data& data,
                       std::size_t* steps) {
  std::size_t ran = 0;
  if (steps == nullptr) steps = &ran;
  *steps = 0;
  std::uint32_t acc = 0, x = 0;
  std::uint32_t mem[BPF_MEMWORDS] = {};
  for (std::size_t pc = 0; pc < length; ++pc) {
    const sock_filter& ins = program[pc];
    ++*steps;
    std::size_t jump = 0;
    switch (ins.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        // seccomp_data is read in 32-bit words at aligned offsets, as the kernel checks.
        if (ins.k % 4 != 0 || ins.k + 4 > sizeof data) return SECCOMP_RET_KILL_PROCESS;
        std::memcpy(&acc, reinterpret_cast<const char*>(&data) + ins.k, 4);
        break;
      case BPF_LD | BPF_W | BPF_LEN:
        acc = sizeof data;
        break;
      case BPF_LD | BPF_IMM:
        acc = ins.k;
        break;
      case BPF_LDX | BPF_IMM:
        x = ins.k;
        break;
      case BPF_LD | BPF_MEM:
      case BPF_LDX | BPF_MEM:
      case BPF_ST:
      case BPF_STX:
        if (ins.k >= BPF_MEMWORDS) return SECCOMP_RET_KILL_PROCESS;
        if (ins.code == (BPF_LD | BPF_MEM)) acc = mem[ins.k];
        if (ins.code == (BPF_LDX | BPF_MEM)) x = mem[ins.k];
        if (ins.code == BPF_ST) mem[ins.k] = acc;
        if (ins.code == BPF_STX) mem[ins.k] = x;
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        acc &= ins.k;
        break;
      case BPF_ALU | BPF_OR | BPF_K:
        acc |= ins.k;
        break;
      case BPF_ALU | BPF_AND | BPF_X:
        acc &= x;
        break;
      case BPF_ALU | BPF_OR | BPF_X:
        acc |= x;
        break;
      case BPF_MISC | BPF_TAX:
        x = acc;
        break;
      case BPF_MISC | BPF_TXA:
        acc = x;
        break;
      case BPF_JMP | BPF_JA:
        jump = ins.k;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        jump = acc == ins.k ? ins.jt : ins.jf;
        break;
      case BPF_JMP | BPF_JGT | BPF_K:
        jump = acc > ins.k ? ins.jt : ins.jf;
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        jump = acc >= ins.k ? ins.jt : ins.jf;
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        jump = (acc & ins.k) != 0 ? ins.jt : ins.jf;
        break;
      case BPF_JMP | BPF_JEQ | BPF_X:
        jump = acc == x ? ins.jt : ins.jf;
        break;
      case BPF_JMP | BPF_JGT | BPF_X:
        jump = acc > x ? ins.jt : ins.jf;
        break;
      case BPF_JMP | BPF_JGE | BPF_X:
        jump = acc >= x ? ins.jt : ins.jf;
        break;
      case BPF_RET | BPF_K:
        return ins.k;
      case BPF_RET | BPF_A:
        return acc;
      default:
        return SECCOMP_RET_KILL_PROCESS;
    }
    if (jump >= length - pc) return SECCOMP_RET_KILL_PROCESS;
    pc += jump;
  }
  return SECCOMP_RET_KILL_PROCESS;
}

}  // namespace oarbank::seccomp
