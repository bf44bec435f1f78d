// Text for people: user input echoed safely in one-line messages, "did you mean", durations,
// and shell quoting for printing commands.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness/common/json.h"

namespace harness {

// The closest name to `unknown` among `candidates`, or "" if none is close; for "did you mean".
std::string closest_name(std::string_view unknown, const std::vector<std::string_view>& candidates);

// Short rendering of a JSON value for error messages: strings quoted and escaped (so a message
// stays one line), long values cut.
std::string describe_json(const Json& value);
// A user's string (a workload name, a key, a line of a file) as describe_json shows it:
// "bad\nname". Bytes that are not UTF-8 are replaced, so binary input cannot garble a terminal.
std::string describe_text(std::string_view text);
// `text` cut to at most `max_bytes`, between whole characters and escapes, ending in "..." when
// cut, so that echoing user input keeps an error message short.
std::string shortened(std::string_view text, std::size_t max_bytes);

// Letters, digits, '_', '.' and '-', not starting with '.' or '-', 1 to `max_length` bytes: a
// name that is safe as a file name and in a command line (experiment and build names).
bool is_plain_name(std::string_view name, std::size_t max_length = 100);

// A host name as RFC 1123 has it: dot-separated labels of 1 to 63 letters, digits and '-', none
// starting or ending with '-', at most 253 characters in all. What mpirun and ssh are given as a
// host must be one: anything else ("a;b", "-oProxyCommand=...") is a shell word or an option, and
// Open MPI refuses '_' ("node_01": "illegal character", exit code 205) once the results exist.
bool is_host_name(std::string_view name);

// The items of a comma-separated command-line value ("--metrics busbw,comm_time"). Throws
// ConfigError "<option> \"1,,2\": expected items separated by single commas, got an empty item 2"
// for an empty list or item: "1,,2" is a typo, not the list 1,2.
std::vector<std::string> split_comma_list(std::string_view list, std::string_view option);

// The non-empty lines of `text`.
std::vector<std::string> split_lines(std::string_view text);

// "45 s", "3 min 20 s", "2 h 05 min".
std::string format_duration(double seconds);

// One command line as a POSIX shell reads it: arguments that need it in single quotes.
std::string shell_quoted(const std::vector<std::string>& argv);

}  // namespace harness
