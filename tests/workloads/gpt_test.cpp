// The gpt workload: GPT-2's layout and parameter count, a loss that falls on the synthetic
// tokens' pattern, byte-level text windows.
#include "workloads/gpt.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "harness/common/errors.h"
#include "workloads/factories.h"
#include "workloads/workload.h"

namespace harness {
namespace {

PointSettings tiny_gpt() {
  PointSettings settings;
  settings.workload = "gpt";
  settings.dataset_size = 64;
  settings.test_size = 16;
  return settings;
}

int64_t model_parameters(Workload& workload) {
  int64_t count = 0;
  for (const auto& parameter : workload.parameters()) count += parameter.numel();
  return count;
}

TEST(Gpt, Gpt2SmallHasGpt2SmallsParameters) {
  PointSettings settings = tiny_gpt();
  for (const auto& [key, value] : {std::pair{"n_layer", 12}, {"n_head", 12}, {"d_model", 768}, {"seq_len", 1024},
                                   {"vocab", 50257}}) {
    apply_setting(settings, key, value, "test");
  }
  settings.dataset_size = 1;
  settings.test_size = 1;
  // Hugging Face's GPT2LMHeadModel("gpt2"): 124,439,808 parameters, the output tied to wte.
  EXPECT_EQ(gpt_parameter_count(gpt_options(settings)), 124'439'808);
  EXPECT_EQ(model_parameters(*make_workload(settings, kNoCudaDevice)), 124'439'808);
  // The tiny default: 0.12 M.
  EXPECT_EQ(model_parameters(*make_workload(tiny_gpt(), kNoCudaDevice)), gpt_parameter_count(GptOptions{}));
}

TEST(Gpt, TheLossFallsOnTheSyntheticTokensPattern) {
  auto workload = make_workload(tiny_gpt(), kNoCudaDevice);
  const double initial_test_loss = workload->evaluate().loss;
  EXPECT_NEAR(initial_test_loss, std::log(256.0), 0.2);  // GPT-2's small initial weights: near uniform
  double first = 0;
  double last = 0;
  for (int step = 0; step < 120; ++step) {
    for (auto& parameter : workload->parameters()) parameter.mutable_grad() = torch::zeros_like(parameter);
    std::vector<int64_t> positions;
    for (int64_t i = 0; i < 16; ++i) positions.push_back((step * 16 + i) % workload->train_size());
    const double loss = workload->forward_backward(positions);
    if (step == 0) first = loss;
    last = loss;
    torch::NoGradGuard no_grad;
    for (auto& parameter : workload->parameters()) parameter.sub_(parameter.grad(), 1.0);
  }
  EXPECT_LT(last, 0.6 * first) << "first " << first << ", last " << last;
  const Evaluation evaluation = workload->evaluate();
  EXPECT_LT(evaluation.loss, 0.7 * initial_test_loss);
  EXPECT_GT(evaluation.accuracy, 0.2);  // chance is 1/256
}

TEST(Gpt, ATextFileIsReadAsByteWindowsWithTheLastTenthHeldOut) {
  const auto file = std::filesystem::temp_directory_path() / "harness_gpt_text.txt";
  {
    std::ofstream out(file);
    for (int i = 0; i < 200; ++i) out << "the quick brown fox jumps over the lazy dog. ";  // 9000 bytes
  }
  PointSettings settings = tiny_gpt();
  settings.data_path = file.string();
  settings.dataset_size = 0;
  settings.test_size = 0;
  apply_setting(settings, "seq_len", 32, "test");
  // (9000 - 1) / 32 = 281 windows of 33 bytes; a tenth, 28, held out.
  EXPECT_EQ(gpt_text_windows(settings).train, 253);
  EXPECT_EQ(gpt_text_windows(settings).test, 28);
  auto workload = make_workload(settings, kNoCudaDevice);
  EXPECT_EQ(workload->train_size(), 253);
  EXPECT_EQ(workload->test_size(), 28);
  for (auto& parameter : workload->parameters()) parameter.mutable_grad() = torch::zeros_like(parameter);
  const std::vector<int64_t> positions = {0, 252};
  EXPECT_GT(workload->forward_backward(positions), 0);
  std::filesystem::remove(file);
}

// Attention sees only the positions before: on random bytes no next byte can be predicted, so the
// held-out loss stays at ln 256 however the training goes; a model that saw the token it predicts
// would drive it towards 0.
TEST(Gpt, OnRandomBytesTheHeldOutLossStaysAtChanceSoNoPositionSeesItsTarget) {
  const auto file = std::filesystem::temp_directory_path() / "harness_gpt_random.bin";
  {
    std::ofstream out(file, std::ios::binary);
    torch::manual_seed(7);
    const auto bytes = torch::randint(256, {20000}, torch::kUInt8);
    out.write(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), bytes.numel());
  }
  PointSettings settings = tiny_gpt();
  settings.data_path = file.string();
  settings.dataset_size = 0;
  settings.test_size = 0;
  apply_setting(settings, "seq_len", 32, "test");
  auto workload = make_workload(settings, kNoCudaDevice);
  for (int step = 0; step < 40; ++step) {
    for (auto& parameter : workload->parameters()) parameter.mutable_grad() = torch::zeros_like(parameter);
    std::vector<int64_t> positions;
    for (int64_t i = 0; i < 16; ++i) positions.push_back((step * 16 + i) % workload->train_size());
    workload->forward_backward(positions);
    torch::NoGradGuard no_grad;
    for (auto& parameter : workload->parameters()) parameter.sub_(parameter.grad(), 0.5);
  }
  EXPECT_GT(workload->evaluate().loss, std::log(256.0) - 0.1);
  std::filesystem::remove(file);
}

TEST(Gpt, ATextFileTooSmallOrAVocabularyBelowItsBytesIsRefusedBeforeLaunch) {
  const auto file = std::filesystem::temp_directory_path() / "harness_gpt_short.txt";
  std::ofstream(file) << "too short for two windows of 65 bytes";
  PointSettings settings = tiny_gpt();
  settings.data_path = file.string();
  try {
    gpt_limits(settings);
    ADD_FAILURE() << "a 37-byte file was accepted";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("data_path: " + file.string() + ": 37 bytes give fewer than 2 windows "
                                             "of seq_len + 1 = 65 bytes"),
              std::string::npos)
        << error.what();
  }
  std::filesystem::remove(file);
  apply_setting(settings, "vocab", 100, "test");
  const auto problem = gpt_check(settings, PointShape{});
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->key, "vocab");
  EXPECT_EQ(problem->message, "expected at least 256 with a byte-level text file (data_path), got 100");
  settings.data_path.clear();
  EXPECT_FALSE(gpt_check(settings, PointShape{}).has_value()) << "synthetic tokens take any vocabulary";
}

TEST(Gpt, EveryRankBuildsTheSameSequencesAndWeights) {
  auto first = make_workload(tiny_gpt(), kNoCudaDevice);
  auto second = make_workload(tiny_gpt(), kNoCudaDevice);
  const std::vector<int64_t> positions = {3, 9};
  for (auto* workload : {first.get(), second.get()}) {
    for (auto& parameter : workload->parameters()) parameter.mutable_grad() = torch::zeros_like(parameter);
  }
  EXPECT_EQ(first->forward_backward(positions), second->forward_backward(positions));
}

}  // namespace
}  // namespace harness
