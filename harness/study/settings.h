// The settings of one point of an experiment: everything a rank needs to train one
// configuration. An experiment file fixes some of them and sweeps others; each key of the
// experiment's "settings" and "sweep" objects is one field below, under the same name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace harness {

using Json = nlohmann::ordered_json;

struct PointSettings {
  // "train": data-parallel training of `workload`. "comm": a message-size sweep of `backend`
  // alone (nccl-tests style); the comm_* keys below apply.
  std::string kind = "train";
  std::string workload = "iris_mlp";
  // "torch": LibTorch modules and autograd; "blas": the workload's hand-written forward and
  // backward over OpenBLAS (iris_mlp only).
  std::string engine = "torch";
  std::string backend = "allreduce";
  std::string device = "cpu";
  int ranks = 1;
  int batch_size = 4;         // per training rank (scaling "weak") or global (scaling "strong")
  // "weak": every training rank takes batch_size samples per step, so the global batch grows
  // with the ranks; "strong": the global batch is batch_size, split evenly over the ranks.
  std::string scaling = "weak";
  int64_t dataset_size = 0;   // training samples used; 0 = the workload's whole training set
  int64_t test_size = 0;      // held-out samples evaluated after each epoch; 0 = all
  int epochs = 10;
  double lr = 0.01;
  // "linear": the learning rate is lr × global batch / lr_reference_batch (Goyal et al., "Accurate,
  // Large Minibatch SGD"), reached by a linear ramp from lr over warmup_epochs.
  std::string lr_scaling = "none";
  int lr_reference_batch = 0;  // 0 = the per-rank batch (so one rank keeps lr)
  double warmup_epochs = 0;
  int64_t seed = 42;
  // The first warmup_steps steps train but are left out of every time and throughput (they
  // include allocation and connection set-up); they must fit in the first epoch.
  int warmup_steps = 0;
  int threads_per_rank = 0;   // LibTorch/OpenBLAS threads per rank; 0 = cores / ranks (at least 1)
  double timeout_s = 600;     // wall-clock limit for the point's whole mpirun
  std::string data_path;      // "" = the workload's default data file
  bool ps_server_trains = false;  // backend "ps": whether rank 0 trains as well as serving
  double bucket_mb = 25;      // gradients are reduced in buckets of about this many MiB (as DDP)
  bool overlap = false;       // reduce each bucket during backward, as soon as it is complete
  // workload "resnet": depth (18 or 50), synthetic square RGB images of image_size pixels,
  // num_classes random labels.
  int resnet_depth = 18;
  int image_size = 32;
  int num_classes = 10;
  // workload "kmeans": clusters, convergence threshold (largest centroid move), data source
  // ("iris" or "blobs"); `epochs` bounds the iterations.
  int kmeans_k = 3;
  double kmeans_tolerance = 1e-4;
  std::string kmeans_data = "iris";
  // kind "comm": message sizes from comm_min_bytes to comm_max_bytes, × comm_size_factor.
  int64_t comm_min_bytes = 4;
  int64_t comm_max_bytes = 64 << 20;
  int comm_size_factor = 4;
  int comm_iterations = 20;         // timed reductions per size
  int comm_warmup_iterations = 5;   // untimed reductions per size, first
};

// One row of the settings table: the key used in experiment files and how to read it.
struct SettingInfo {
  std::string_view key;
  std::string_view expected;  // what a valid value looks like, for error messages and docs
  std::string_view help;
  std::string_view json_schema;  // the value's JSON Schema (type and bounds), for schema.json
};

// Every key an experiment may set, in the order records and tables print them.
const std::vector<SettingInfo>& setting_table();

// Sets one field from a JSON value. `where` prefixes the error ("exp.json: sweep.ranks[2]").
// Throws ConfigError naming `where`, the expected form and the value found.
void apply_setting(PointSettings& settings, std::string_view key, const Json& value,
                   const std::string& where);

Json to_json(const PointSettings& settings);
// Reads a JSON object written by to_json (every key optional). Throws ConfigError.
PointSettings settings_from_json(const Json& object, const std::string& where);

// Which ranks compute gradients: all of them, except rank 0 under a parameter server that only
// serves (backend "ps" without ps_server_trains).
struct WorkerLayout {
  int workers = 1;  // ranks that train
  int index = 0;    // this rank's position among them; -1 when it does not train
};
WorkerLayout worker_layout(const PointSettings& settings, int rank, int world_size);

// Samples each training rank takes per step, and all of them together.
int64_t per_rank_batch(const PointSettings& settings, int workers);
int64_t global_batch(const PointSettings& settings, int workers);

// The learning rate after `epochs_done` epochs (fractional: 1.5 = halfway through the second),
// with lr_scaling and warmup applied.
double learning_rate(const PointSettings& settings, int workers, double epochs_done);

// Threads each rank uses: threads_per_rank, or cores / ranks when it is 0 (auto).
int resolved_threads_per_rank(const PointSettings& settings, int cores);

// The closest key to `unknown` from `candidates`, or "" if none is close; for "did you mean".
std::string closest_name(std::string_view unknown, const std::vector<std::string_view>& candidates);

// Short rendering of a JSON value for error messages: strings quoted and escaped (so a message
// stays one line), long values cut.
std::string describe_json(const Json& value);
// A user's string (a workload name, a key) as describe_json shows it: "bad\nname".
std::string describe_text(std::string_view text);
// `text` cut to at most `max_bytes`, between whole characters and escapes, ending in "..." when
// cut, so that echoing user input keeps an error message short.
std::string shortened(std::string_view text, std::size_t max_bytes);

}  // namespace harness
