// Version of the harness and the commit it was built from (generated at build time).
#pragma once

#include <string>

namespace harness {

inline constexpr const char* kHarnessVersion = HARNESS_VERSION;
// "<commit>" or "<commit>-dirty"; "unknown" when built outside a git checkout.
std::string git_commit();

}  // namespace harness
