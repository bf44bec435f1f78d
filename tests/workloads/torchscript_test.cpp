// The torchscript workload: a model exported from PyTorch trains as the built-in ones do, and a
// model file that cannot serve is said in one line, before any step.
#include "workloads/torchscript.h"

#include <gtest/gtest.h>

#include <torch/torch.h>
#include <torch/version.h>

#include <filesystem>
#include <stdexcept>

#include "tests/workloads/cnn_export.h"
#include "workloads/factories.h"
#include "workloads/mnist_cnn.h"
#include "workloads/workload.h"

namespace harness {
namespace {

PointSettings own_model(const std::filesystem::path& model, const std::string& data) {
  PointSettings settings;
  settings.workload = "torchscript";
  apply_setting(settings, "model_path", model.string(), "test");
  apply_setting(settings, "model_data", data, "test");
  settings.dataset_size = 8;
  settings.test_size = 8;
  return settings;
}

int64_t exported_parameters(Workload& workload) {
  int64_t count = 0;
  for (const auto& parameter : workload.parameters()) count += parameter.numel();
  return count;
}

void zero_gradients(Workload& workload) {
  for (auto& parameter : workload.parameters()) parameter.mutable_grad() = torch::zeros_like(parameter);
}

bool have_mnist() { return std::filesystem::exists(kDefaultMnistDirectory); }

TEST(TorchScript, TheShippedConvNetTrainsWithItsBatchNormBuffersAndEvaluates) {
  if (!have_mnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  auto workload = make_workload(own_model(test::shipped_model("fashion_convnet.pt"), "mnist"), kNoCudaDevice);
  EXPECT_EQ(exported_parameters(*workload), 46'826);  // export_models.py prints it
  EXPECT_EQ(workload->train_size(), 8);
  // BatchNorm's running means and variances (and counters) are the module's buffers.
  EXPECT_EQ(workload->buffers().size(), 6U);
  zero_gradients(*workload);
  const std::vector<int64_t> positions = {0, 5, 7};
  EXPECT_GT(workload->forward_backward(positions), 0);
  for (const auto& parameter : workload->parameters()) EXPECT_GT(parameter.grad().abs().sum().item<double>(), 0);
  const Evaluation evaluation = workload->evaluate();
  EXPECT_EQ(evaluation.samples, 8);
  EXPECT_GT(evaluation.loss, 0);
}

TEST(TorchScript, TheExportedCnnFromTheBuiltInWeightsComputesTheBuiltInLossAndGradients) {
  if (!have_mnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const auto file = std::filesystem::temp_directory_path() / "harness_cnn_export_test.pt";
  PointSettings builtin_settings;
  builtin_settings.workload = "mnist_cnn";
  builtin_settings.dataset_size = 8;
  builtin_settings.test_size = 8;
  test::save_cnn_export_with_builtin_weights(builtin_settings, file);
  auto builtin = make_workload(builtin_settings, kNoCudaDevice);
  auto exported = make_workload(own_model(file, "mnist"), kNoCudaDevice);
  std::filesystem::remove(file);
  zero_gradients(*builtin);
  zero_gradients(*exported);
  const std::vector<int64_t> positions = {1, 2, 6};
  EXPECT_NEAR(exported->forward_backward(positions), builtin->forward_backward(positions), 1e-5);
  // conv2's weight gradient: the same values (channels-last in the built-in CNN, a layout only).
  const auto builtin_gradient = builtin->parameters()[2].grad().contiguous();
  const auto exported_gradient = exported->parameters()[2].grad().contiguous();
  EXPECT_LE((builtin_gradient - exported_gradient).norm().item<double>() / builtin_gradient.norm().item<double>(),
            1e-5);
  EXPECT_NEAR(exported->evaluate().loss, builtin->evaluate().loss, 1e-5);
}

TEST(TorchScript, SyntheticDataHasTheShapeAndClassesTheExperimentSays) {
  PointSettings settings = own_model(test::shipped_model("fashion_convnet.pt"), "synthetic");
  apply_setting(settings, "input_shape", Json::array({1, 28, 28}), "test");
  apply_setting(settings, "classes", 10, "test");
  settings.dataset_size = 0;  // the default synthetic set
  settings.test_size = 0;
  auto workload = make_workload(settings, kNoCudaDevice);
  EXPECT_EQ(workload->train_size(), 256);
  EXPECT_EQ(workload->test_size(), 64);
  zero_gradients(*workload);
  const std::vector<int64_t> positions = {0, 1};
  EXPECT_GT(workload->forward_backward(positions), 0);
}

// The reason the rank program fails the point with: one line, the file, what was expected.
std::string failure_of(const PointSettings& settings) {
  try {
    make_workload(settings, kNoCudaDevice);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "(no failure)";
}

TEST(TorchScript, AModelWhoseOutputIsNotTheClassesFailsBeforeAnyStepSayingWhatWasExpected) {
  PointSettings settings = own_model(test::shipped_model("fashion_convnet.pt"), "synthetic");
  apply_setting(settings, "input_shape", Json::array({1, 28, 28}), "test");
  apply_setting(settings, "classes", 3, "test");
  const std::string reason = failure_of(settings);
  EXPECT_NE(reason.find("fashion_convnet.pt: expected its forward to return one tensor [2, 3] (a batch of 2 "
                        "samples of [1, 28, 28], classes 3), got [2, 10]"),
            std::string::npos)
      << reason;
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
}

TEST(TorchScript, AnInputOfAnotherShapeFailsWithTheInterpretersErrorInOneLine) {
  PointSettings settings = own_model(test::shipped_model("fashion_convnet.pt"), "synthetic");
  apply_setting(settings, "input_shape", Json::array({3, 32, 32}), "test");
  apply_setting(settings, "classes", 10, "test");
  const std::string reason = failure_of(settings);
  EXPECT_NE(reason.find("fashion_convnet.pt: its forward on [2, 3, 32, 32] failed: RuntimeError: Given groups=1, "
                        "weight of size [16, 1, 5, 5], expected input[2, 3, 32, 32] to have 1 channels"),
            std::string::npos)
      << reason;
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
}

TEST(TorchScript, AModelSavedByANewerPyTorchFailsNamingThisLibTorch) {
  const auto file = std::filesystem::path(HARNESS_SOURCE_DIR) / "tests" / "fixtures" / "models" / "newer_version.pt";
  PointSettings settings = own_model(file, "synthetic");
  apply_setting(settings, "input_shape", Json::array({4}), "test");
  apply_setting(settings, "classes", 3, "test");
  // A zip with TorchScript code: it passes the check before launch; LibTorch refuses it.
  EXPECT_EQ(torchscript_archive_problem(file), "");
  const std::string reason = failure_of(settings);
  EXPECT_NE(reason.find("newer_version.pt: LibTorch " TORCH_VERSION " cannot load it: "), std::string::npos) << reason;
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
}

}  // namespace
}  // namespace harness
