// The GPUs of a device "cuda" point as records keep them (record.h GpuFacts): whether ranks share
// a GPU, one line for people, and the record's JSON.
#pragma once

#include <string>
#include <vector>

#include "harness/common/json.h"
#include "harness/results/json_fields.h"
#include "harness/results/record.h"

namespace harness {

// Whether two ranks of one host use the same GPU (same PCI bus id), given each rank's host.
bool ranks_share_a_gpu(const std::vector<std::string>& hosts, const GpuFacts& gpus);
// One line for consoles and reports: "2 rank(s) on NVIDIA H100 80GB HBM3 (80 GiB), driver 13.0,
// runtime 13.0; ranks share a GPU, with MPS".
std::string describe_gpus(const std::vector<std::string>& hosts, const GpuFacts& gpus);

// measurements.gpus as records write and read it.
Json to_json(const GpuFacts& gpus);
GpuFacts gpus_from(const Fields& fields);

}  // namespace harness
