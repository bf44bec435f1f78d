// End to end: experiment files mutated at random (a fixed seed, so a failure repeats) are either
// valid or refused in one line naming the file, with exit 2: never a crash, a hang or another exit.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e_helpers.h"
#include "harness/common/process.h"

namespace harness::e2e {
namespace {

using Json = nlohmann::json;

// Values of every type and the edges of each: what a hand-edited file or a script may write.
std::vector<Json> odd_values() {
  return {nullptr, true, false, 0, -1, 1, 2147483648LL, std::numeric_limits<int64_t>::max(),
          std::numeric_limits<int64_t>::min(), 1e308, -1e308, 1.5, -0.0, 1e-320, "", "x", "0", "1e400",
          "nan", Json::array(), Json::object(), Json::array({1, 2}), Json{{"a", 1}}, "\u00e9\u4e2d",
          std::string(5000, 'a'), Json::array({Json::array({Json::array()})}), "--help", "$(id)", "a\nb"};
}

const std::vector<std::string> kKeys = {"ranks", "backend", "workload", "batch_size", "epochs", "kind", "device",
                                        "nodes", "zip", "sweep", "settings", "repeats", "launcher", "baseline",
                                        "exclude", "hosts", "simulate_hosts", "mode", "name", "timeout_s", "lr",
                                        "threads_per_rank", "dataset_size", "comm_max_bytes", "bucket_mb",
                                        "inject_compute_delay_rank", "inject_compute_delay_ms"};

void collect_pointers(const Json& node, const Json::json_pointer& at, std::vector<Json::json_pointer>& out) {
  out.push_back(at);
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) collect_pointers(value, at / key, out);
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) collect_pointers(node[i], at / i, out);
  }
}

Json mutated(Json document, std::mt19937& random) {
  const std::vector<Json> odd = odd_values();
  const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random); };
  const int mutations = 1 + static_cast<int>(pick(3));
  for (int m = 0; m < mutations; ++m) {
    std::vector<Json::json_pointer> pointers;
    collect_pointers(document, Json::json_pointer(), pointers);
    const Json::json_pointer at = pointers[pick(pointers.size())];
    if (at.empty()) continue;
    Json& parent = document[at.parent_pointer()];
    const std::string key = at.back();
    switch (pick(4)) {
      case 0:
      case 1:
        document[at] = odd[pick(odd.size())];
        break;
      case 2:  // a key removed, or one added
        if (parent.is_object() && pick(2) == 0) {
          parent.erase(key);
        } else if (parent.is_object()) {
          parent[kKeys[pick(kKeys.size())]] = odd[pick(odd.size())];
        } else {
          parent.erase(std::stoul(key));
        }
        break;
      default: {  // a value pushed past its range
        Json& value = document[at];
        if (value.is_number_integer()) {
          value = value.get<int64_t>() * 1000000;
        } else if (value.is_number_float()) {
          value = -value.get<double>();
        } else if (value.is_array()) {
          const Json copy = value;
          for (std::size_t times = pick(40); times > 0; --times) value.insert(value.end(), copy.begin(), copy.end());
        } else if (value.is_string()) {
          value = value.get<std::string>() + std::string(1, "x \n"[pick(3)]);
        }
      }
    }
  }
  return document;
}

TEST(Input, MutatedExperimentsAreValidOrRefusedInOneLine) {
  const fs::path dir = scratch("fuzz");
  std::vector<fs::path> files;  // sorted: the same cases on every machine
  for (const auto& entry : fs::directory_iterator(fs::path(HARNESS_SOURCE_DIR) / "experiments")) {
    if (entry.path().extension() == ".json" && entry.path().filename() != "schema.json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Json> shipped;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    shipped.push_back(Json::parse(in));
  }
  ASSERT_GE(shipped.size(), 10U);
  std::mt19937 random(20261128);
  int refused = 0;
  constexpr int kCases = 250;
  for (int i = 0; i < kCases; ++i) {
    std::string text = mutated(shipped[random() % shipped.size()], random).dump();
    if (random() % 20 == 0) text.resize(random() % (text.size() + 1));  // cut short
    const fs::path file = dir / "case.json";
    std::ofstream(file) << text;
    fs::remove(dir / "log");  // run_process appends to it
    ProcessRequest request = harness_request({"run", file.string(), "--dry-run"}, dir / "log");
    request.timeout_s = 30;
    const ProcessOutcome outcome = run_process(request);
    const std::vector<std::string> output = tail_lines((dir / "log").string(), 10000);
    const std::string said = "case " + std::to_string(i) + ": " + text.substr(0, 2000) + "\n" + joined(output);
    ASSERT_TRUE(outcome.exited && !outcome.timed_out) << outcome.describe() << "\n" << said;
    ASSERT_TRUE(outcome.exit_code == 0 || outcome.exit_code == 2) << said;
    if (outcome.exit_code == 0) continue;
    ++refused;
    std::vector<std::string> errors;
    for (const std::string& line : output) {
      if (line.rfind("warning", 0) != 0 && line.rfind("harness: warning", 0) != 0) errors.push_back(line);
    }
    ASSERT_EQ(errors.size(), 1U) << said;
    EXPECT_NE(errors[0].find(file.string() + ": "), std::string::npos) << said;
  }
  // Most mutations break a file; some leave it valid: both sides were exercised.
  EXPECT_GT(refused, kCases / 4);
  EXPECT_LT(refused, kCases);
}

}  // namespace
}  // namespace harness::e2e
