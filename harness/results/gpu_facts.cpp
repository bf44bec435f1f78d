#include "harness/results/gpu_facts.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace harness {

bool ranks_share_a_gpu(const std::vector<std::string>& hosts, const GpuFacts& gpus) {
  for (std::size_t a = 0; a < gpus.ranks.size(); ++a) {
    for (std::size_t b = a + 1; b < gpus.ranks.size(); ++b) {
      const bool same_host = a < hosts.size() && b < hosts.size() && hosts[a] == hosts[b];
      if (same_host && gpus.ranks[a].pci_bus_id == gpus.ranks[b].pci_bus_id) return true;
    }
  }
  return false;
}

std::string describe_gpus(const std::vector<std::string>& hosts, const GpuFacts& gpus) {
  // The distinct models, each with how many ranks use one.
  std::vector<std::pair<std::string, int>> models;
  for (const RankGpu& gpu : gpus.ranks) {
    const std::string model = fmt::format("{} ({:.0f} GiB)", gpu.name, static_cast<double>(gpu.memory_bytes) / (1 << 30));
    auto found = std::find_if(models.begin(), models.end(), [&](const auto& m) { return m.first == model; });
    if (found == models.end()) {
      models.emplace_back(model, 1);
    } else {
      ++found->second;
    }
  }
  std::string text;
  for (const auto& [model, ranks] : models) {
    text += fmt::format("{}{} rank(s) on {}", text.empty() ? "" : ", ", ranks, model);
  }
  text += fmt::format(", driver {}, runtime {}", gpus.driver_version, gpus.runtime_version);
  if (!gpus.nccl_version.empty()) text += ", NCCL " + gpus.nccl_version;
  const bool mps = std::any_of(gpus.ranks.begin(), gpus.ranks.end(), [](const RankGpu& gpu) { return gpu.mps; });
  if (ranks_share_a_gpu(hosts, gpus)) {
    text += mps ? "; ranks share a GPU, with MPS" : "; ranks share a GPU, without MPS (time-sliced)";
  } else if (mps) {
    text += "; MPS running";
  }
  return text;
}

Json to_json(const GpuFacts& gpus) {
  Json ranks = Json::array();
  for (const RankGpu& gpu : gpus.ranks) {
    ranks.push_back({{"index", gpu.index},
                     {"name", gpu.name},
                     {"pci_bus_id", gpu.pci_bus_id},
                     {"memory_bytes", gpu.memory_bytes},
                     {"mps", gpu.mps}});
  }
  return {{"ranks", std::move(ranks)},
          {"driver_version", gpus.driver_version},
          {"runtime_version", gpus.runtime_version},
          {"nccl_version", gpus.nccl_version}};
}

GpuFacts gpus_from(const Fields& fields) {
  GpuFacts gpus;
  const Json& ranks = fields.at("ranks");
  if (!ranks.is_array()) fields.fail("ranks", "a list");
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const Fields gpu(ranks[r], fmt::format("{}: ranks[{}]", fields.where(), r));
    gpus.ranks.push_back({static_cast<int>(gpu.integer("index")), gpu.text("name"), gpu.text("pci_bus_id"),
                          gpu.integer("memory_bytes"), gpu.boolean("mps")});
  }
  gpus.driver_version = fields.text("driver_version");
  gpus.runtime_version = fields.text("runtime_version");
  gpus.nccl_version = fields.text("nccl_version");
  return gpus;
}

}  // namespace harness
