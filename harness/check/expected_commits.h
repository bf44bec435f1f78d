// `harness check --expect-commit NAME=COMMIT`: the records of build NAME must name COMMIT, so
// that a gate compares the builds it means (the CI gate holds base's records to the commit in
// experiments/baselines/ci-comm.commit: a base built from another checkout, or a stale binary
// at its path, would be compared without anyone noticing).
#pragma once

#include <string>

#include "harness/check/configurations.h"

namespace harness {

struct ExpectedCommit {
  std::string build;   // a value of the setting `build`
  std::string commit;  // 7 to 40 hex digits
};

// Parses "base=e72dc4e4ecac". Throws ConfigError naming --expect-commit.
ExpectedCommit read_expected_commit(const std::string& argument);

// Whether a build's recorded commit ("31f404a0c2b1", "31f404a0c2b1-dirty") is `expected`: one is a
// prefix of the other, and the build's tree had no changes.
bool names_commit(const std::string& recorded, const std::string& expected);

// Throws ConfigError when `side` has no record of the build, or one whose build names another
// commit (or says none): "--expect-commit base=e72dc4e: 5 of 30 record(s) of build base in DIR
// ran another build: 1a2b3c4d5e6f (p000-....json), expected commit e72dc4e".
void check_expected_commit(const ResultsSide& side, const ExpectedCommit& expected);

}  // namespace harness
