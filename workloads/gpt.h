// `gpt`: a decoder-only transformer laid out as GPT-2 (Radford et al. 2019): token and learned
// position embeddings, n_layer pre-LayerNorm blocks of causal multi-head self-attention and a
// 4x-wide GELU MLP, a final LayerNorm, and the output projection tied to the token embedding
// (no parameter of its own). Initialised as GPT-2: normal(0, 0.02) weights, the residual
// projections' scaled by 1 / sqrt(2 n_layer), zero biases; no dropout. The loss is the mean
// next-token cross-entropy over every position; held-out accuracy is the share of next tokens
// predicted (argmax).
//
// From a tiny model for CI (the defaults: 2 layers, 2 heads, d_model 64, 64 tokens, vocabulary 256;
// 0.12 M parameters) to GPT-2 small (12, 12, 768, 1024, 50257; 124 M).
//
// Data: without data_path, synthetic sequences with a learnable pattern: each starts at a random
// token and every next token is (5 t + 3) mod vocab, or, one time in ten, a random token; so the
// loss can fall from ln(vocab) towards the noise's entropy. With data_path, a text file read as
// bytes (vocab at least 256): non-overlapping windows of seq_len + 1 bytes, the last tenth of them
// held out (test_size: fewer).
//
// Settings used: n_layer, n_head, d_model, seq_len, vocab, data_path, dataset_size (sequences),
// test_size, seed, lr, batch_size (sequences per rank).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "harness/study/settings.h"
#include "workloads/registry.h"

namespace harness {

class Workload;

struct GptOptions {
  int n_layer = 2;
  int n_head = 2;
  int d_model = 64;
  int seq_len = 64;
  int vocab = 256;
};
GptOptions gpt_options(const PointSettings& settings);
std::vector<SettingRow> gpt_setting_rows();

// Parameters of the model these options make (the tied output projection counted once).
int64_t gpt_parameter_count(const GptOptions& options);

inline constexpr int64_t kDefaultGptSequences = 256;
inline constexpr int64_t kDefaultGptTestSequences = 64;
inline constexpr int kSyntheticTokenMultiplier = 5;  // next = (5 t + 3) mod vocab
inline constexpr int kSyntheticTokenIncrement = 3;
inline constexpr double kSyntheticTokenNoise = 0.1;  // the share of random next tokens

// The windows of a byte-level text file: training ones and held-out ones.
struct TextWindows {
  int64_t train = 0;
  int64_t test = 0;
};
// Throws ConfigError "data_path: ..." for a file that cannot be read or holds fewer than two windows.
TextWindows gpt_text_windows(const PointSettings& settings);

SampleLimits gpt_limits(const PointSettings& settings);
std::optional<SettingProblem> gpt_check(const PointSettings& settings, const PointShape& shape);

std::unique_ptr<Workload> make_gpt(const PointSettings& settings, int cuda_device);

}  // namespace harness
