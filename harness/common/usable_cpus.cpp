#include "harness/common/usable_cpus.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "harness/common/machine.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0;;) {
    const auto next = text.find(separator, at);
    parts.push_back(text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return parts;
    at = next + 1;
  }
}

template <typename Number>
std::optional<Number> number_of(std::string_view text) {
  text = trimmed(text);
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A small file's whole text; nothing when it cannot be read (a cgroup without the controller has
// no such file, and sysfs may hide topology in a container).
std::optional<std::string> file_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// mountinfo escapes space, tab, newline and backslash in paths as \040, \011, \012 and \134.
std::string unescaped(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size()) {
      const std::string_view digits = text.substr(i + 1, 3);
      if (digits.find_first_not_of("01234567") == std::string_view::npos) {
        out += static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// One line of /proc/PID/mountinfo: the fields a cgroup's directory needs.
struct Mount {
  std::string root;                  // the mounted subtree of the hierarchy ("/" for all of it)
  std::string mount_point;           // where it is
  std::string type;                  // "cgroup2", "cgroup", ...
  std::vector<std::string> options;  // the super options: a v1 hierarchy's controllers among them
};

std::vector<Mount> cgroup_mounts(std::string_view mountinfo) {
  std::vector<Mount> mounts;
  for (const std::string_view line : split(mountinfo, '\n')) {
    const auto dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> before;
    for (const std::string_view field : split(line.substr(0, dash), ' ')) {
      if (!field.empty()) before.push_back(field);
    }
    std::vector<std::string_view> after;
    for (const std::string_view field : split(line.substr(dash + 3), ' ')) {
      if (!field.empty()) after.push_back(field);
    }
    if (before.size() < 5 || after.size() < 3) continue;
    if (after[0] != "cgroup2" && after[0] != "cgroup") continue;
    Mount mount{unescaped(before[3]), unescaped(before[4]), std::string(after[0]), {}};
    for (const std::string_view option : split(after[2], ',')) mount.options.emplace_back(option);
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

// The directory of cgroup `path` under `mount` (prefixed by `root`), or nothing when the mount
// does not hold it (another subtree, or a path outside a cgroup namespace: "/../..").
std::optional<fs::path> cgroup_directory(const Mount& mount, const std::string& path, const fs::path& root) {
  if (path.find("/..") != std::string::npos) return std::nullopt;
  std::string relative = path;
  if (mount.root != "/") {
    if (path != mount.root && path.rfind(mount.root + "/", 0) != 0) return std::nullopt;
    relative = path.substr(mount.root.size());
  }
  return root / fs::path(mount.mount_point).relative_path() / fs::path(relative).relative_path();
}

// The smallest quota that `read` finds from `directory` up to `top`, both included.
template <typename Read>
std::optional<CpuQuota> smallest_quota(fs::path directory, const fs::path& top, Read read) {
  std::optional<CpuQuota> smallest;
  for (;;) {
    if (const std::optional<CpuQuota> here = read(directory); here && (!smallest || here->cpus < smallest->cpus)) {
      smallest = here;
    }
    const fs::path normal = directory.lexically_normal();
    if (normal == top.lexically_normal() || !normal.has_relative_path() || normal == normal.parent_path()) break;
    directory = normal.parent_path();
  }
  return smallest;
}

// "0-3,8": consecutive CPUs as ranges.
std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string text;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  text = trimmed(text);
  if (text.empty()) return cpus;
  for (const std::string_view item : split(text, ',')) {
    const auto dash = item.find('-');
    const std::optional<int> first = number_of<int>(item.substr(0, dash));
    const std::optional<int> last = dash == std::string_view::npos ? first : number_of<int>(item.substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first || *last - *first > 1 << 20) return std::nullopt;
    for (int cpu = *first; cpu <= *last; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

int count_physical_cores(const std::vector<int>& cpus, const fs::path& cpu_root) {
  std::set<std::vector<int>> cores;
  for (const int cpu : cpus) {
    const fs::path topology = cpu_root / fmt::format("cpu{}", cpu) / "topology";
    std::optional<std::vector<int>> siblings;
    for (const char* name : {"core_cpus_list", "thread_siblings_list"}) {
      if (const std::optional<std::string> text = file_text(topology / name)) {
        siblings = parse_cpu_list(*text);
        if (siblings && !siblings->empty()) break;
      }
    }
    cores.insert(siblings && !siblings->empty() ? *siblings : std::vector<int>{cpu});
  }
  return static_cast<int>(cores.size());
}

std::optional<double> parse_cpu_max(std::string_view text) {
  const std::vector<std::string_view> fields = split(trimmed(text), ' ');
  if (fields.size() != 2 || fields[0] == "max") return std::nullopt;
  const std::optional<double> quota = number_of<double>(fields[0]);
  const std::optional<double> period = number_of<double>(fields[1]);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return *quota / *period;
}

std::optional<double> parse_cfs_quota(std::string_view quota_us, std::string_view period_us) {
  const std::optional<double> quota = number_of<double>(quota_us);
  const std::optional<double> period = number_of<double>(period_us);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;  // -1: unlimited
  return *quota / *period;
}

std::optional<CpuQuota> cgroup_cpu_quota(std::string_view proc_cgroup, std::string_view mountinfo, const fs::path& root,
                                         std::string* cgroup) {
  std::string unified_path;  // "0::PATH"
  std::string cpu_path;      // "N:...cpu...:PATH" (v1)
  bool has_unified = false;
  bool has_cpu = false;
  for (const std::string_view line : split(proc_cgroup, '\n')) {
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string path(trimmed(line.substr(second + 1)));
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    if (line.substr(0, first) == "0" && controllers.empty()) {
      std::tie(has_unified, unified_path) = std::pair(true, path);
    }
    for (const std::string_view controller : split(controllers, ',')) {
      if (controller == "cpu") std::tie(has_cpu, cpu_path) = std::pair(true, path);
    }
  }
  const std::vector<Mount> mounts = cgroup_mounts(mountinfo);
  // The v1 cpu controller, where a hierarchy has it; else cgroup v2's cpu.max (present in a
  // cgroup whose parent enabled the cpu controller).
  if (has_cpu) {
    for (const Mount& mount : mounts) {
      if (mount.type != "cgroup" ||
          std::find(mount.options.begin(), mount.options.end(), "cpu") == mount.options.end()) {
        continue;
      }
      const std::optional<fs::path> directory = cgroup_directory(mount, cpu_path, root);
      if (!directory) continue;
      if (cgroup != nullptr) *cgroup = cpu_path;
      return smallest_quota(*directory, root / fs::path(mount.mount_point).relative_path(),
                            [](const fs::path& here) -> std::optional<CpuQuota> {
                              const std::optional<std::string> quota = file_text(here / "cpu.cfs_quota_us");
                              const std::optional<std::string> period = file_text(here / "cpu.cfs_period_us");
                              if (!quota || !period) return std::nullopt;
                              const std::optional<double> cpus = parse_cfs_quota(*quota, *period);
                              if (!cpus) return std::nullopt;
                              return CpuQuota{*cpus, (here / "cpu.cfs_quota_us").string()};
                            });
    }
  }
  if (has_unified) {
    for (const Mount& mount : mounts) {
      if (mount.type != "cgroup2") continue;
      const std::optional<fs::path> directory = cgroup_directory(mount, unified_path, root);
      if (!directory) continue;
      if (cgroup != nullptr) *cgroup = unified_path;
      return smallest_quota(*directory, root / fs::path(mount.mount_point).relative_path(),
                            [](const fs::path& here) -> std::optional<CpuQuota> {
                              const std::optional<std::string> text = file_text(here / "cpu.max");
                              const std::optional<double> cpus = text ? parse_cpu_max(*text) : std::nullopt;
                              if (!cpus) return std::nullopt;
                              return CpuQuota{*cpus, (here / "cpu.max").string()};
                            });
    }
  }
  return std::nullopt;
}

std::optional<std::vector<int>> parse_slurm_cpus_per_node(std::string_view text) {
  std::vector<int> nodes;
  text = trimmed(text);
  if (text.empty()) return std::nullopt;
  for (const std::string_view item : split(text, ',')) {
    const auto open = item.find('(');
    const std::optional<int> cpus = number_of<int>(item.substr(0, open));
    int times = 1;
    if (open != std::string_view::npos) {
      if (item.size() < open + 4 || item.substr(open, 2) != "(x" || item.back() != ')') return std::nullopt;
      const std::optional<int> repeat = number_of<int>(item.substr(open + 2, item.size() - open - 3));
      if (!repeat || *repeat < 1 || *repeat > 1 << 20) return std::nullopt;
      times = *repeat;
    }
    if (!cpus || *cpus < 1) return std::nullopt;
    nodes.insert(nodes.end(), static_cast<std::size_t>(times), *cpus);
  }
  return nodes;
}

int UsableCpus::cores() const {
  int count = std::max<int>(1, static_cast<int>(cpus.size()));
  // A quota a hair under a whole CPU (written as 99999 / 100000) is that CPU.
  if (quota) count = std::min(count, std::max(1, static_cast<int>(std::floor(quota->cpus + 1e-6))));
  return count;
}

int UsableCpus::slots() const {
  return std::max(1, physical_cores > 0 ? physical_cores : static_cast<int>(cpus.size()));
}

std::string UsableCpus::describe() const {
  const int count = cores();
  std::string text = fmt::format("{} core{}", count, count == 1 ? "" : "s");
  std::vector<std::string> why;
  if (online > static_cast<int>(cpus.size()) && !cpus.empty()) {
    why.push_back(
        fmt::format("affinity mask: CPU{} {} of {} online", cpus.size() == 1 ? "" : "s", cpu_list_text(cpus), online));
  }
  if (quota && count < static_cast<int>(std::max<std::size_t>(1, cpus.size()))) {
    why.push_back(
        fmt::format("cgroup CPU quota of {:.3g} CPU{} ({})", quota->cpus, quota->cpus == 1 ? "" : "s", quota->file));
  }
  if (why.empty()) return text;
  text += " (";
  for (std::size_t i = 0; i < why.size(); ++i) text += fmt::format("{}{}", i > 0 ? "; " : "", why[i]);
  return text + ")";
}

UsableCpus usable_cpus() {
  UsableCpus usable;
  usable.cpus = allowed_cpus();
  usable.online = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  usable.physical_cores = count_physical_cores(usable.cpus);
  const std::optional<std::string> cgroup = file_text("/proc/self/cgroup");
  const std::optional<std::string> mountinfo = file_text("/proc/self/mountinfo");
  if (cgroup && mountinfo) usable.quota = cgroup_cpu_quota(*cgroup, *mountinfo, "/", &usable.cgroup);
  return usable;
}

}  // namespace harness
