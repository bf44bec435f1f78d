#include "harness/rank/crash_report.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace harness {
namespace {

int crashed_rank = -1;

// Only write(2) below: the handler runs where malloc or stdio may be what broke.
void say(const char* text) {
  const ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void say_hex(std::uintptr_t value) {
  char digits[2 + 16 + 1] = "0x";
  char reversed[16];
  int count = 0;
  do {
    reversed[count++] = "0123456789abcdef"[value % 16];
    value /= 16;
  } while (value != 0 && count < 16);
  for (int i = 0; i < count; ++i) digits[2 + i] = reversed[count - 1 - i];
  digits[2 + count] = '\0';
  say(digits);
}

void say_decimal(int value) {
  char text[12];
  int at = 11;
  text[at] = '\0';
  const bool negative = value < 0;
  unsigned magnitude = negative ? 0U - static_cast<unsigned>(value) : static_cast<unsigned>(value);
  do {
    text[--at] = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) text[--at] = '-';
  say(text + at);
}

// "ADDRESS (LIBRARY+OFFSET, SYMBOL)": the offset is what addr2line takes.
void say_code_address(const char* label, const void* address) {
  say(label);
  say_hex(reinterpret_cast<std::uintptr_t>(address));
  Dl_info info{};
  if (address != nullptr && dladdr(address, &info) != 0 && info.dli_fname != nullptr) {
    say(" (");
    say(info.dli_fname);
    say("+");
    say_hex(reinterpret_cast<std::uintptr_t>(address) - reinterpret_cast<std::uintptr_t>(info.dli_fbase));
    if (info.dli_sname != nullptr) {
      say(", ");
      say(info.dli_sname);
    }
    say(")");
  }
  say("\n");
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV (segmentation fault)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGFPE: return "SIGFPE (arithmetic exception)";
    default: return "a fatal signal";
  }
}

void on_crash(int signal, siginfo_t* info, void* context) {
  say("harness worker (rank ");
  say_decimal(crashed_rank);
  say("): ");
  say(signal_name(signal));
  say(" at address ");
  say_hex(reinterpret_cast<std::uintptr_t>(info->si_addr));
  say("\n");
#if defined(__x86_64__)
  const auto* machine = &static_cast<const ucontext_t*>(context)->uc_mcontext;
  const auto* instruction = reinterpret_cast<const void*>(machine->gregs[REG_RIP]);
  say_code_address("  instruction: ", instruction);
  // A call through a null (or garbage) pointer jumped to an unmapped page: the call pushed the
  // caller's return address, which is still on top of the stack.
  if (reinterpret_cast<std::uintptr_t>(instruction) == reinterpret_cast<std::uintptr_t>(info->si_addr)) {
    say_code_address("  called from: ", *reinterpret_cast<void* const*>(machine->gregs[REG_RSP]));
  }
#elif defined(__aarch64__)
  const auto* machine = &static_cast<const ucontext_t*>(context)->uc_mcontext;
  say_code_address("  instruction: ", reinterpret_cast<const void*>(machine->pc));
  say_code_address("  link register: ", reinterpret_cast<const void*>(machine->regs[30]));
#else
  (void)context;
#endif
  void* frames[64];
  const int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  // SA_RESETHAND restored the default action: raising the signal again ends the process as it
  // would have ended (a core where enabled, the signal in the exit status).
  raise(signal);
}

}  // namespace

void install_crash_report(int rank) {
  crashed_rank = rank;
  void* warm_up[1];
  backtrace(warm_up, 1);  // loads libgcc's unwinder now, not inside the handler
  struct sigaction action {};
  action.sa_sigaction = on_crash;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (const int signal : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) sigaction(signal, &action, nullptr);
}

}  // namespace harness
