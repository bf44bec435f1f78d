#include "harness/study/point_key.h"

#include <cstdint>

#include <fmt/format.h>

namespace harness {
namespace {

uint64_t fnv1a_64(std::string_view text) {
  uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

// The settings as the key spells them: without `build` when it is the running harness, so that a
// point of a one-build study keeps the identity (and id) it had before builds could be named; and
// likewise without the compute delay's settings when nothing is delayed (the rank is moot then),
// and without the settings added later while they hold their defaults.
std::string key_settings(const PointSettings& settings) {
  Json json = to_json(settings);
  if (settings.build.empty()) json.erase("build");
  if (settings.inject_compute_delay_ms == 0) {
    json.erase("inject_compute_delay_ms");
    json.erase("inject_compute_delay_rank");
  }
  static const Json defaults = to_json(PointSettings{});
  for (const char* added :
       {"ring_allreduce_below_chunk_bytes", "cuda_ipc_one_shot_below_bytes", "cuda_ipc_device_arrivals",
        "staging_chunk_bytes", "shm_reduce_threads", "shm_copy_engine_gathers", "scheme", "sync_every",
        "ps_servers", "max_staleness", "target", "pipeline_stages", "micro_batches",
        "pipeline_schedule", "stage_boundaries", "model_path", "input_shape", "classes", "loss", "model_data",
        "n_layer", "n_head", "d_model", "seq_len", "vocab"}) {
    if (json.contains(added) && json[added] == defaults[added]) json.erase(added);
  }
  return json.dump();
}

}  // namespace

PointKey::PointKey(const PointSettings& settings, int repeat)
    : text_(fmt::format("{}|{}", key_settings(settings), repeat)) {}

std::string PointKey::hash() const {
  const uint64_t hash = fnv1a_64(text_);
  return fmt::format("{:08x}", static_cast<uint32_t>(hash ^ (hash >> 32)));
}

std::string point_id(int index, const PointKey& key) {
  return fmt::format("p{:03}-{}", index, key.hash());
}

}  // namespace harness
