#include "harness/study/experiment.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/text.h"
#include "harness/launch/launcher.h"
#include "harness/common/version.h"

namespace harness {
namespace {

// "$schema" lets editors find experiments/schema.json; the harness ignores its value.
const std::vector<std::string_view> kTopLevelKeys = {
    "name", "description", "launcher", "settings", "sweep", "exclude", "repeats", "baseline",
    "$schema"};
constexpr int kMaxRepeats = 1000;

std::string unknown_key_message(const std::string& where, const std::string& key,
                                const std::vector<std::string_view>& valid) {
  const std::string suggestion = closest_name(key, valid);
  if (!suggestion.empty()) {
    return fmt::format("{}: unknown key {} (did you mean \"{}\"?)", where, describe_text(key),
                       suggestion);
  }
  return fmt::format("{}: unknown key {} (expected one of: {})", where, describe_text(key),
                     fmt::join(valid, ", "));
}

// Experiment files are a few KB; the cap keeps /dev/zero or a mistaken huge file from filling
// the memory.
constexpr std::size_t kMaxFileBytes = std::size_t{16} << 20;

std::string read_file_text(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw ConfigError(fmt::format("{}: is a directory, expected an experiment file (JSON)", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open experiment file", path));
  std::string text(kMaxFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxFileBytes) {
    throw ConfigError(fmt::format("{}: expected an experiment file of at most {} MiB, got more",
                                  path, kMaxFileBytes >> 20));
  }
  return text;
}

// Deep enough for any experiment file (they need fewer than 10 levels), shallow enough that
// nothing recursive over the document (dump, copies, comparisons) can overflow the stack.
constexpr std::size_t kMaxNestingDepth = 256;
// Every valid key is a name from a fixed table; a long key or one with a control character
// would make every message that names it long or several lines.
constexpr std::size_t kMaxKeyLength = 100;

// Builds the document as Json::parse does, but refuses what Json::parse accepts silently or
// cannot survive: a key repeated in one object (Json::parse keeps the last), nesting deeper than
// kMaxNestingDepth, and keys that would garble messages. nlohmann's SAX parser is iterative, so
// the depth is checked before anything recursive sees the document.
class ExperimentDocumentBuilder final : public nlohmann::json_sax<Json> {
 public:
  explicit ExperimentDocumentBuilder(std::string source_path)
      : source_path_(std::move(source_path)) {}

  Json& root() { return root_; }
  // nlohmann's message for the error that stopped the parse, and the offset of its last token.
  const std::string& error_message() const { return error_message_; }
  std::size_t error_position() const { return error_position_; }

  bool null() override { return add(Json(nullptr)); }
  bool boolean(bool value) override { return add(Json(value)); }
  bool number_integer(number_integer_t value) override { return add(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return add(Json(value)); }
  bool number_float(number_float_t value, const string_t& /*text*/) override {
    return add(Json(value));
  }
  bool string(string_t& value) override { return add(Json(std::move(value))); }
  bool binary(binary_t& value) override { return add(Json(std::move(value))); }

  bool start_object(std::size_t /*size*/) override { return open(Json::object()); }
  bool start_array(std::size_t /*size*/) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& key) override {
    Frame& object = frames_.back();
    const bool readable =
        key.size() <= kMaxKeyLength && std::none_of(key.begin(), key.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        });
    if (!readable) {
      const std::string where = path(frames_.size() - 1);
      throw ConfigError(fmt::format(
          "{}: {}expected keys of up to {} characters without control characters, got {}",
          source_path_, where.empty() ? "" : where + ": ", kMaxKeyLength, describe_text(key)));
    }
    if (object.value->contains(key)) {
      object.key = key;
      throw ConfigError(fmt::format(
          "{}: {}: duplicate key \"{}\"; expected each key once in an object (JSON would keep "
          "only the last)",
          source_path_, path(frames_.size()), key));
    }
    object.key = std::move(key);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const Json::exception& error) override {
    error_message_ = error.what();
    // `position` is just past the token; its start is where a reader looks.
    error_position_ = position - std::min(position, last_token.size());
    return false;
  }

 private:
  struct Frame {
    Json* value;      // an object or array being filled; stable while it is open
    std::string key;  // objects: the key whose value is being read
  };

  // Puts `value` where the parse is (the root, the current key or the end of the array).
  Json* insert(Json value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& parent = frames_.back();
    if (parent.value->is_object()) return &((*parent.value)[parent.key] = std::move(value));
    parent.value->push_back(std::move(value));
    return &parent.value->back();
  }

  bool add(Json value) {
    insert(std::move(value));
    return true;
  }

  bool open(Json container) {
    frames_.push_back({insert(std::move(container)), {}});
    if (frames_.size() > kMaxNestingDepth) {
      const std::string where = path(frames_.size() - 1);
      throw ConfigError(
          fmt::format("{}: {}expected lists and objects nested at most {} deep, got deeper",
                      source_path_, where.empty() ? "" : where + ": ", kMaxNestingDepth));
    }
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  // Where the value being read inside frames_[0 .. levels) is, as "settings.lr" or
  // "exclude[1].ranks"; only the first few steps of a deep path.
  std::string path(std::size_t levels) const {
    constexpr std::size_t kMaxSteps = 4;
    std::string text;
    for (std::size_t i = 0; i < levels; ++i) {
      if (i == kMaxSteps) return text + "...";
      const Frame& frame = frames_[i];
      if (frame.value->is_object()) {
        text += (text.empty() ? "" : ".") + frame.key;
      } else {
        text += fmt::format("[{}]", frame.value->empty() ? 0 : frame.value->size() - 1);
      }
    }
    return text;
  }

  std::string source_path_;
  Json root_;
  std::vector<Frame> frames_;
  std::string error_message_;
  std::size_t error_position_ = 0;
};

// "line 3, column 7" of a byte offset, counting as nlohmann does (both from 1).
std::string line_and_column(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t column = line_start == std::string::npos ? offset : offset - line_start - 1;
  return fmt::format("line {}, column {}", line, column + 1);
}

Json parse_json(const std::string& text, const std::string& source_path) {
  ExperimentDocumentBuilder builder(source_path);
  std::string message;
  bool positioned = false;
  try {
    if (Json::sax_parse(text, &builder)) return std::move(builder.root());
    message = builder.error_message();
    positioned = true;
  } catch (const Json::exception& error) {
    message = error.what();  // any other nlohmann error is still bad input, not a crash
  }
  // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line 3, ..."
  // or "[json.exception.out_of_range.406] number overflow parsing '1e400'" (no position).
  if (const auto pos = message.find("] "); pos != std::string::npos) {
    message = message.substr(pos + 2);
  }
  if (positioned && message.find(" at line ") == std::string::npos) {
    message += " at " + line_and_column(text, builder.error_position());
  }
  // The last token read ends the message and may be a whole long string.
  constexpr std::size_t kMaxMessageBytes = 200;
  throw ConfigError(
      fmt::format("{}: invalid JSON: {}", source_path, shortened(message, kMaxMessageBytes)));
}

constexpr std::size_t kMaxNameLength = 100;

bool is_directory_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength || name[0] == '.' || name[0] == '-') {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
  });
}

uint64_t fnv1a_64(std::string_view text) {
  uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace

Experiment load_experiment(const std::string& path) {
  return parse_experiment(read_file_text(path), path);
}

Experiment parse_experiment(const std::string& text, const std::string& source_path) {
  Json root = parse_json(text, source_path);
  if (!root.is_object()) {
    throw ConfigError(fmt::format("{}: expected a JSON object at the top level, got {}",
                                  source_path, describe_json(root)));
  }

  Experiment experiment;
  experiment.source_path = source_path;
  experiment.source_text = text;
  for (const auto& [key, value] : root.items()) {
    if (std::find(kTopLevelKeys.begin(), kTopLevelKeys.end(), key) == kTopLevelKeys.end()) {
      throw ConfigError(unknown_key_message(source_path, key, kTopLevelKeys));
    }
  }

  const std::string name_where = source_path + ": name";
  if (!root.contains("name")) throw ConfigError(name_where + ": required key is missing");
  if (!root["name"].is_string() || !is_directory_name(root["name"].get<std::string>())) {
    throw ConfigError(fmt::format(
        "{}: expected up to {} letters, digits, '_', '.' and '-', not starting with '.' or '-' "
        "(it names a directory), got {}",
        name_where, kMaxNameLength, describe_json(root["name"])));
  }
  experiment.name = root["name"].get<std::string>();

  if (root.contains("description")) {
    if (!root["description"].is_string()) {
      throw ConfigError(fmt::format("{}: description: expected a string, got {}", source_path,
                                    describe_json(root["description"])));
    }
    experiment.description = root["description"].get<std::string>();
  }

  if (root.contains("launcher")) {
    const Json& launcher = root["launcher"];
    const auto& names = launcher_names();
    if (!launcher.is_string() ||
        std::find(names.begin(), names.end(), launcher.get<std::string>()) == names.end()) {
      throw ConfigError(fmt::format("{}: launcher: expected one of: {}, got {}", source_path,
                                    fmt::join(names, ", "), describe_json(launcher)));
    }
    experiment.launcher = launcher.get<std::string>();
  }

  std::set<std::string> fixed_keys;
  if (root.contains("settings")) {
    const Json& settings = root["settings"];
    if (!settings.is_object()) {
      throw ConfigError(fmt::format("{}: settings: expected an object, got {}", source_path,
                                    describe_json(settings)));
    }
    for (const auto& [key, value] : settings.items()) {
      apply_setting(experiment.base, key, value, fmt::format("{}: settings.{}", source_path, key));
      fixed_keys.insert(key);
    }
  }

  if (root.contains("sweep")) {
    const Json& sweep = root["sweep"];
    if (!sweep.is_object()) {
      throw ConfigError(fmt::format("{}: sweep: expected an object of lists, got {}", source_path,
                                    describe_json(sweep)));
    }
    std::set<std::string> swept_keys;
    int zip_groups = 0;
    // One list of values for `key`, checked value by value so a bad one is reported before
    // anything runs.
    const auto read_axis = [&](const std::string& key, const Json& values, const std::string& where,
                               int zip_group) {
      if (key == "kind") {
        throw ConfigError(where + ": \"kind\" cannot be swept (an experiment either trains or "
                                  "benchmarks communication); set it in \"settings\"");
      }
      if (fixed_keys.count(key) != 0) {
        throw ConfigError(where + ": key is also in \"settings\"; set it in one place only");
      }
      if (!swept_keys.insert(key).second) {
        throw ConfigError(where + ": key is swept twice; sweep it in one place only");
      }
      if (!values.is_array() || values.empty()) {
        throw ConfigError(fmt::format("{}: expected a non-empty list of values, got {}", where,
                                      describe_json(values)));
      }
      SweepAxis axis{key, {}, zip_group, where.substr(source_path.size() + 2)};
      for (std::size_t i = 0; i < values.size(); ++i) {
        PointSettings scratch = experiment.base;
        apply_setting(scratch, key, values[i], fmt::format("{}[{}]", where, i));
        // In a zip group a value may repeat (the tuples must differ; checked below).
        if (zip_group < 0 &&
            std::find(axis.values.begin(), axis.values.end(), values[i]) != axis.values.end()) {
          throw ConfigError(fmt::format("{}[{}]: duplicate value {}; each value may appear once",
                                        where, i, describe_json(values[i])));
        }
        axis.values.push_back(values[i]);
      }
      experiment.sweep.push_back(std::move(axis));
    };
    const auto read_zip = [&](const Json& group, const std::string& where) {
      if (!group.is_object() || group.empty()) {
        throw ConfigError(fmt::format("{}: expected an object of equally long lists, got {}",
                                      where, describe_json(group)));
      }
      const int number = zip_groups++;
      const std::size_t first_axis = experiment.sweep.size();
      for (const auto& [key, values] : group.items()) {
        read_axis(key, values, fmt::format("{}.{}", where, key), number);
        const SweepAxis& first = experiment.sweep[first_axis];
        const SweepAxis& added = experiment.sweep.back();
        if (added.values.size() != first.values.size()) {
          throw ConfigError(fmt::format("{}.{}: expected {} values, as many as {}, got {}", where,
                                        key, first.values.size(), first.path, added.values.size()));
        }
      }
      const std::size_t length = experiment.sweep[first_axis].values.size();
      std::set<std::string> tuples;
      for (std::size_t i = 0; i < length; ++i) {
        Json tuple = Json::array();
        for (std::size_t a = first_axis; a < experiment.sweep.size(); ++a) {
          tuple.push_back(experiment.sweep[a].values[i]);
        }
        if (!tuples.insert(tuple.dump()).second) {
          throw ConfigError(fmt::format("{}: entry {} repeats an earlier one ({}); each "
                                        "combination may appear once",
                                        where, i, tuple.dump()));
        }
      }
    };
    for (const auto& [key, values] : sweep.items()) {
      const std::string where = fmt::format("{}: sweep.{}", source_path, key);
      if (key == "zip") {
        if (values.is_array() && values.empty()) {
          throw ConfigError(where +
                            ": expected an object of equally long lists, or a non-empty list of "
                            "such objects, got []");
        }
        if (values.is_array()) {
          for (std::size_t g = 0; g < values.size(); ++g) read_zip(values[g], fmt::format("{}[{}]", where, g));
        } else {
          read_zip(values, where);
        }
        continue;
      }
      read_axis(key, values, where, -1);
    }
  }

  if (root.contains("repeats")) {
    const Json& repeats = root["repeats"];
    if (!repeats.is_number_integer() || repeats.get<int64_t>() < 1 ||
        repeats.get<int64_t>() > kMaxRepeats) {
      throw ConfigError(fmt::format("{}: repeats: expected an integer from 1 to {}, got {}",
                                    source_path, kMaxRepeats, describe_json(repeats)));
    }
    experiment.repeats = repeats.get<int>();
  }

  // The value a setting takes once read, as to_json writes it (so 2.0 and 2 compare equal).
  const auto normalised = [&experiment](const std::string& key, const Json& value,
                                        const std::string& where) {
    PointSettings scratch = experiment.base;
    apply_setting(scratch, key, value, where);
    return to_json(scratch)[key];
  };

  if (root.contains("exclude")) {
    const Json& rules = root["exclude"];
    const std::string where = source_path + ": exclude";
    if (!rules.is_array() || rules.empty()) {
      throw ConfigError(fmt::format("{}: expected a non-empty list of objects, got {}", where,
                                    describe_json(rules)));
    }
    for (std::size_t r = 0; r < rules.size(); ++r) {
      const std::string rule_where = fmt::format("{}[{}]", where, r);
      if (!rules[r].is_object() || rules[r].empty()) {
        throw ConfigError(fmt::format("{}: expected an object of setting values, got {}",
                                      rule_where, describe_json(rules[r])));
      }
      std::vector<std::pair<std::string, std::vector<Json>>> rule;
      for (const auto& [key, value] : rules[r].items()) {
        const std::string key_where = rule_where + "." + key;
        std::vector<Json> values;
        if (value.is_array()) {
          if (value.empty()) {
            throw ConfigError(key_where + ": expected a value or a non-empty list of values, got []");
          }
          for (std::size_t i = 0; i < value.size(); ++i) {
            values.push_back(normalised(key, value[i], fmt::format("{}[{}]", key_where, i)));
          }
        } else {
          values.push_back(normalised(key, value, key_where));
        }
        rule.emplace_back(key, std::move(values));
      }
      experiment.exclude.push_back(std::move(rule));
    }
  }

  if (root.contains("baseline")) {
    const Json& baseline = root["baseline"];
    const std::string where = source_path + ": baseline";
    if (!baseline.is_object() || baseline.empty()) {
      throw ConfigError(fmt::format("{}: expected an object of setting values, got {}", where,
                                    describe_json(baseline)));
    }
    for (const auto& [key, value] : baseline.items()) {
      if (key == "kind") throw ConfigError(where + ".kind: a baseline cannot change \"kind\"");
      experiment.baseline[key] = normalised(key, value, where + "." + key);
    }
  }
  return experiment;
}

std::vector<Point> expand(const Experiment& experiment) {
  // Dimensions of the product: a plain axis alone, or all the axes of one zip group.
  std::vector<std::vector<std::size_t>> dimensions;
  std::vector<int> group_dimension;
  for (std::size_t a = 0; a < experiment.sweep.size(); ++a) {
    const int group = experiment.sweep[a].zip_group;
    if (group < 0) {
      dimensions.push_back({a});
      continue;
    }
    if (static_cast<std::size_t>(group) >= group_dimension.size()) {
      group_dimension.resize(group + 1, -1);
    }
    if (group_dimension[group] < 0) {
      group_dimension[group] = static_cast<int>(dimensions.size());
      dimensions.emplace_back();
    }
    dimensions[group_dimension[group]].push_back(a);
  }
  const auto length = [&](const std::vector<std::size_t>& dimension) {
    return experiment.sweep[dimension.front()].values.size();
  };

  std::size_t count = 1;
  for (const auto& dimension : dimensions) {
    count *= length(dimension);
    if (count > kMaxPoints) {
      throw ConfigError(fmt::format(
          "{}: sweep: expected at most {} points in all, but the lists multiply to more (at "
          "\"{}\")",
          experiment.source_path, kMaxPoints, experiment.sweep[dimension.front()].key));
    }
  }
  // The distinct combinations, in odometer order (last dimension fastest).
  std::vector<PointSettings> combinations;
  std::vector<std::size_t> position(dimensions.size(), 0);
  while (true) {
    PointSettings settings = experiment.base;
    for (std::size_t d = 0; d < dimensions.size(); ++d) {
      for (const std::size_t a : dimensions[d]) {
        const SweepAxis& axis = experiment.sweep[a];
        apply_setting(settings, axis.key, axis.values[position[d]],
                      experiment.source_path + ": " + axis.path);
      }
    }
    combinations.push_back(std::move(settings));
    std::size_t d = dimensions.size();
    bool done = true;
    while (d > 0) {
      --d;
      if (++position[d] < length(dimensions[d])) {
        done = false;
        break;
      }
      position[d] = 0;
    }
    if (done) break;
  }

  // Exclude rules: a rule drops a combination when every key it names has one of its values.
  std::vector<bool> rule_used(experiment.exclude.size(), false);
  std::vector<PointSettings> kept;
  for (auto& settings : combinations) {
    const Json values = to_json(settings);
    bool excluded = false;
    for (std::size_t r = 0; r < experiment.exclude.size(); ++r) {
      const bool matches = std::all_of(
          experiment.exclude[r].begin(), experiment.exclude[r].end(), [&values](const auto& term) {
            return std::find(term.second.begin(), term.second.end(), values[term.first]) !=
                   term.second.end();
          });
      if (matches) {
        rule_used[r] = true;
        excluded = true;
      }
    }
    if (!excluded) kept.push_back(std::move(settings));
  }
  for (std::size_t r = 0; r < rule_used.size(); ++r) {
    if (!rule_used[r]) {
      throw ConfigError(fmt::format(
          "{}: exclude[{}]: matches no point of the sweep; expected values that the settings or "
          "the sweep produce",
          experiment.source_path, r));
    }
  }
  if (kept.empty()) {
    throw ConfigError(fmt::format("{}: exclude: removes every point; expected at least one to remain",
                                  experiment.source_path));
  }
  // Equal values written differently (1 and 1.0 in a zip group) would make two points with the
  // same settings, hash and record.
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const auto [where, inserted] = seen.emplace(to_json(kept[i]).dump(), i);
    if (!inserted) {
      throw ConfigError(fmt::format(
          "{}: sweep: combinations {} and {} have the same settings; each may appear once",
          experiment.source_path, where->second, i));
    }
  }
  if (!experiment.baseline.empty()) {
    const bool found = std::any_of(kept.begin(), kept.end(), [&experiment](const PointSettings& settings) {
      const Json values = to_json(settings);
      return std::all_of(experiment.baseline.items().begin(), experiment.baseline.items().end(),
                         [&values](const auto& item) { return values[item.key()] == item.value(); });
    });
    if (!found) {
      throw ConfigError(fmt::format(
          "{}: baseline: no point has {}; expected values that the settings or the sweep produce",
          experiment.source_path, experiment.baseline.dump()));
    }
  }
  if (kept.size() * static_cast<std::size_t>(experiment.repeats) > kMaxPoints) {
    throw ConfigError(fmt::format("{}: repeats: expected at most {} points in all, got {} × {}",
                                  experiment.source_path, kMaxPoints, kept.size(),
                                  experiment.repeats));
  }

  // Repeats run the whole sweep again rather than one point several times in a row, so that a
  // slow spell of the machine spreads over all points instead of hitting one.
  std::vector<Point> points;
  for (int repeat = 0; repeat < experiment.repeats; ++repeat) {
    for (const auto& settings : kept) {
      Point point;
      point.index = static_cast<int>(points.size());
      point.repeat = repeat;
      point.settings = settings;
      point.id = point_id(point.index, point.settings, repeat);
      points.push_back(std::move(point));
    }
  }
  return points;
}

std::string point_hash(const PointSettings& settings, int repeat) {
  const uint64_t hash =
      fnv1a_64(fmt::format("{}|{}|{}", kHarnessVersion, repeat, to_json(settings).dump()));
  return fmt::format("{:08x}", static_cast<uint32_t>(hash ^ (hash >> 32)));
}

std::string point_id(int index, const PointSettings& settings, int repeat) {
  return fmt::format("p{:03}-{}", index, point_hash(settings, repeat));
}

}  // namespace harness
