#include "workloads/gpt.h"

#include <torch/nn/init.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

#include <cmath>
#include <limits>
#include <fstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "workloads/workload.h"

namespace harness {
namespace {

// Causal multi-head self-attention: one projection to queries, keys and values, softmax over the
// positions at or before each one, the heads concatenated and projected back.
class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(int64_t width, int64_t heads, int64_t context)
      : heads_(heads),
        qkv_(register_module("c_attn", torch::nn::Linear(width, 3 * width))),
        projection_(register_module("c_proj", torch::nn::Linear(width, width))) {
    // Above the diagonal: the future positions each position may not attend to. Not a parameter.
    future_ = register_buffer("future", torch::ones({context, context}, torch::kBool).triu(1));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t batch = x.size(0);
    const int64_t length = x.size(1);
    const int64_t width = x.size(2);
    const int64_t head_width = width / heads_;
    // [batch, length, 3 width] -> three [batch, heads, length, head_width]
    const auto parts = qkv_(x).view({batch, length, 3, heads_, head_width}).permute({2, 0, 3, 1, 4}).unbind(0);
    auto scores = torch::matmul(parts[0], parts[1].transpose(-2, -1)) / std::sqrt(static_cast<double>(head_width));
    scores = scores.masked_fill(future_.narrow(0, 0, length).narrow(1, 0, length),
                                -std::numeric_limits<float>::infinity());
    const auto mixed = torch::matmul(torch::softmax(scores, -1), parts[2]);
    return projection_(mixed.transpose(1, 2).reshape({batch, length, width}));
  }

  torch::nn::Linear& projection() { return projection_; }

 private:
  int64_t heads_;
  torch::nn::Linear qkv_, projection_;
  torch::Tensor future_;
};
TORCH_MODULE(CausalSelfAttention);

// One pre-LayerNorm block: x + attention(ln(x)), then x + mlp(ln(x)).
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(int64_t width, int64_t heads, int64_t context)
      : ln_1_(register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        attention_(register_module("attn", CausalSelfAttention(width, heads, context))),
        ln_2_(register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))),
        up_(register_module("c_fc", torch::nn::Linear(width, 4 * width))),
        down_(register_module("c_proj", torch::nn::Linear(4 * width, width))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = x + attention_(ln_1_(x));
    return x + down_(torch::gelu(up_(ln_2_(x)), "tanh"));
  }

  // The projections that write into the residual stream (GPT-2 scales their initial weights).
  std::vector<torch::Tensor> residual_projections() { return {attention_->projection()->weight, down_->weight}; }

 private:
  torch::nn::LayerNorm ln_1_;
  CausalSelfAttention attention_;
  torch::nn::LayerNorm ln_2_;
  torch::nn::Linear up_, down_;
};
TORCH_MODULE(Block);

class GptImpl : public torch::nn::Module {
 public:
  explicit GptImpl(const GptOptions& o)
      : token_embedding_(register_module("wte", torch::nn::Embedding(o.vocab, o.d_model))),
        position_embedding_(register_module("wpe", torch::nn::Embedding(o.seq_len, o.d_model))),
        layers_(register_module("h", torch::nn::ModuleList())),
        ln_f_(register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.d_model})))) {
    for (int layer = 0; layer < o.n_layer; ++layer) {
      blocks_.emplace_back(o.d_model, o.n_head, o.seq_len);
      layers_->push_back(blocks_.back());  // named h.0, h.1, ... as GPT-2's
    }
    torch::NoGradGuard no_grad;
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* linear = module->as<torch::nn::Linear>()) {
        torch::nn::init::normal_(linear->weight, 0.0, 0.02);
        torch::nn::init::zeros_(linear->bias);
      } else if (auto* embedding = module->as<torch::nn::Embedding>()) {
        torch::nn::init::normal_(embedding->weight, 0.0, 0.02);
      }
    }
    for (auto& block : blocks_) {
      for (auto& weight : block->residual_projections()) {
        torch::nn::init::normal_(weight, 0.0, 0.02 / std::sqrt(2.0 * o.n_layer));
      }
    }
  }

  // [batch, length] tokens -> [batch, length, vocab] logits.
  torch::Tensor forward(const torch::Tensor& tokens) {
    const auto positions = torch::arange(tokens.size(1), tokens.options());
    auto x = token_embedding_(tokens) + position_embedding_(positions);
    for (auto& block : blocks_) x = block(x);
    // The output projection is the token embedding's transpose (weight tying, as GPT-2).
    return torch::matmul(ln_f_(x), token_embedding_->weight.t());
  }

 private:
  torch::nn::Embedding token_embedding_, position_embedding_;
  torch::nn::ModuleList layers_;
  std::vector<Block> blocks_;  // layers_'s modules, typed
  torch::nn::LayerNorm ln_f_;
};
TORCH_MODULE(Gpt);

// `count` synthetic sequences of `length` tokens: a random start, then next = (5 t + 3) mod vocab,
// replaced by a random token with probability kSyntheticTokenNoise.
torch::Tensor synthetic_sequences(int64_t count, int64_t length, int64_t vocab) {
  auto sequences = torch::empty({count, length}, torch::kInt64);
  sequences.select(1, 0).copy_(torch::randint(vocab, {count}, torch::kInt64));
  for (int64_t t = 1; t < length; ++t) {
    const auto follows = (sequences.select(1, t - 1) * kSyntheticTokenMultiplier + kSyntheticTokenIncrement) % vocab;
    const auto noise = torch::rand({count}) < kSyntheticTokenNoise;
    sequences.select(1, t).copy_(torch::where(noise, torch::randint(vocab, {count}, torch::kInt64), follows));
  }
  return sequences;
}

// Windows [first, first + count) of `bytes`: window w is bytes [w seq_len, w seq_len + seq_len + 1).
torch::Tensor text_windows(const torch::Tensor& bytes, int64_t first, int64_t count, int64_t seq_len) {
  return bytes.narrow(0, first * seq_len, count * seq_len + 1).unfold(0, seq_len + 1, seq_len).to(torch::kInt64);
}

torch::Tensor read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw std::runtime_error(fmt::format("data_path: {}: read failed", path));
  auto bytes = torch::empty({static_cast<int64_t>(contents.size())}, torch::kUInt8);
  std::copy(contents.begin(), contents.end(), reinterpret_cast<char*>(bytes.data_ptr<uint8_t>()));
  return bytes;
}

class GptLanguageModel final : public Workload {
 public:
  GptLanguageModel(const PointSettings& settings, int cuda_device)
      : device_(torch_device(settings.device, cuda_device)), options_(gpt_options(settings)) {
    // The same seed on every rank: the same sequences and the same initial weights.
    torch::manual_seed(static_cast<uint64_t>(settings.seed));
    if (settings.data_path.empty()) {
      const int64_t train = settings.dataset_size > 0 ? settings.dataset_size : kDefaultGptSequences;
      const int64_t test = settings.test_size > 0 ? settings.test_size : kDefaultGptTestSequences;
      train_sequences_ = synthetic_sequences(train, options_.seq_len + 1, options_.vocab);
      test_sequences_ = synthetic_sequences(test, options_.seq_len + 1, options_.vocab);
    } else {
      const TextWindows windows = gpt_text_windows(settings);
      const int64_t train = settings.dataset_size > 0 ? settings.dataset_size : windows.train;
      const torch::Tensor bytes = read_bytes(settings.data_path);
      train_sequences_ = text_windows(bytes, 0, train, options_.seq_len);
      test_sequences_ = text_windows(bytes, windows.train, windows.test, options_.seq_len);
    }
    model_ = Gpt(options_);
    model_->to(device_);
    train_sequences_ = train_sequences_.to(device_);
    test_sequences_ = test_sequences_.to(device_);
  }

  int64_t train_size() const override { return train_sequences_.size(0); }
  int64_t test_size() const override { return test_sequences_.size(0); }
  std::vector<torch::Tensor> parameters() override { return model_->parameters(); }

  double forward_backward(std::span<const int64_t> positions) override {
    const auto sequences = train_sequences_.index_select(0, position_index(positions, device_));
    const auto loss = next_token_loss(sequences);
    mark_backward();
    loss.backward();
    return loss.item<double>();
  }

  Evaluation evaluate() override {
    torch::NoGradGuard no_grad;
    // Bounds the attention scores' memory: [chunk, heads, seq_len, seq_len].
    const int64_t chunk = std::max<int64_t>(1, (int64_t{64} << 20) / (int64_t{options_.n_head} * options_.seq_len *
                                                                      options_.seq_len * 4));
    const int64_t count = test_sequences_.size(0);
    double loss_sum = 0;
    int64_t correct = 0;
    for (int64_t start = 0; start < count; start += chunk) {
      const auto sequences = test_sequences_.narrow(0, start, std::min(chunk, count - start));
      const auto logits = model_->forward(sequences.narrow(1, 0, options_.seq_len));
      const auto targets = sequences.narrow(1, 1, options_.seq_len);
      loss_sum += torch::cross_entropy_loss(logits.flatten(0, 1), targets.flatten(), {}, at::Reduction::Sum)
                      .item<double>();
      correct += logits.argmax(-1).eq(targets).sum().item<int64_t>();
    }
    const double tokens = static_cast<double>(count) * options_.seq_len;
    Evaluation evaluation;
    evaluation.samples = count;
    evaluation.loss = count > 0 ? loss_sum / tokens : 0;
    evaluation.accuracy = count > 0 ? static_cast<double>(correct) / tokens : 0;
    return evaluation;
  }

 private:
  // The mean cross-entropy of each next token given the ones before it.
  torch::Tensor next_token_loss(const torch::Tensor& sequences) {
    const auto logits = model_->forward(sequences.narrow(1, 0, options_.seq_len));
    return torch::cross_entropy_loss(logits.flatten(0, 1), sequences.narrow(1, 1, options_.seq_len).flatten());
  }

  torch::Device device_;
  GptOptions options_;
  Gpt model_{nullptr};
  torch::Tensor train_sequences_, test_sequences_;  // [count, seq_len + 1] tokens
};

}  // namespace

std::unique_ptr<Workload> make_gpt(const PointSettings& settings, int cuda_device) {
  return std::make_unique<GptLanguageModel>(settings, cuda_device);
}

}  // namespace harness
