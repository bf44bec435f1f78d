// The resnet workload builds torchvision's ResNet-18 and ResNet-50 (same parameter counts) and
// trains on its synthetic set.
#include "workloads/factories.h"
#include "workloads/registry.h"
#include "workloads/resnet.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "workloads/workload.h"

namespace harness {
namespace {

int64_t parameter_count(Workload& workload) {
  int64_t count = 0;
  for (const auto& parameter : workload.parameters()) count += parameter.numel();
  return count;
}

PointSettings small_resnet(int depth, int classes) {
  PointSettings settings;
  settings.workload = "resnet";
  apply_setting(settings, "resnet_depth", depth, "test");
  apply_setting(settings, "num_classes", classes, "test");
  settings.dataset_size = 4;
  settings.test_size = 2;
  return settings;
}

TEST(ResNet, ParameterCountsMatchTorchvision) {
  // torchvision.models.resnet18() / resnet50(): 11,689,512 and 25,557,032 parameters.
  EXPECT_EQ(parameter_count(*make_resnet(small_resnet(18, 1000), kNoCudaDevice)), 11'689'512);
  EXPECT_EQ(parameter_count(*make_resnet(small_resnet(50, 1000), kNoCudaDevice)), 25'557'032);
}

TEST(ResNet, TrainsOnItsSyntheticImagesAndEvaluates) {
  auto workload = make_resnet(small_resnet(18, 10), kNoCudaDevice);
  EXPECT_EQ(workload->train_size(), 4);
  EXPECT_EQ(workload->test_size(), 2);
  for (auto& parameter : workload->parameters()) parameter.mutable_grad() = torch::zeros_like(parameter);
  const std::vector<int64_t> positions = {0, 3};
  const double loss = workload->forward_backward(positions);
  EXPECT_GT(loss, 0);
  double gradient_norm = 0;
  for (auto& parameter : workload->parameters()) gradient_norm += parameter.grad().norm().item<double>();
  EXPECT_GT(gradient_norm, 0);
  const Evaluation evaluation = workload->evaluate();
  EXPECT_EQ(evaluation.samples, 2);
  EXPECT_GE(evaluation.accuracy, 0);
  EXPECT_LE(evaluation.accuracy, 1);
}

TEST(ResNet, SyntheticSetIsTheSameOnEveryRank) {
  // Every rank builds the set from the seed; equal losses on equal positions show equal data and
  // equal initial weights.
  auto first = make_resnet(small_resnet(18, 10), kNoCudaDevice);
  auto second = make_resnet(small_resnet(18, 10), kNoCudaDevice);
  const std::vector<int64_t> positions = {1, 2};
  EXPECT_EQ(first->forward_backward(positions), second->forward_backward(positions));
}

}  // namespace
}  // namespace harness
