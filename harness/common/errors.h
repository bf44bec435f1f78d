// Error types. Every error the harness reports derives from harness::Error, so the CLI can catch
// once, print one line and pick the exit status: ConfigError (bad experiment or argument: exit 2,
// nothing launched), LaunchError (a point could not be started or finished), CommError (an MPI
// call failed inside a rank), NotSupported (a valid request this build or machine cannot serve).
#pragma once

#include <stdexcept>
#include <string>

namespace harness {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Messages read "<file>: <field path>: expected <what>, got <found>".
class ConfigError : public Error {
 public:
  using Error::Error;
};

class LaunchError : public Error {
 public:
  using Error::Error;
};

class CommError : public Error {
 public:
  using Error::Error;
};

class NotSupported : public Error {
 public:
  using Error::Error;
};

}  // namespace harness
