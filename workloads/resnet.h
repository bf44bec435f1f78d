// `resnet`: ResNet-18 and ResNet-50 (He et al. 2016) as torchvision builds them (ImageNet stem:
// 7×7/2 convolution and 3×3/2 max pooling; basic blocks for 18, bottleneck blocks with the
// stride on the 3×3 convolution for 50; Kaiming-normal convolutions, BatchNorm γ = 1, β = 0),
// trained on synthetic data as Horovod's synthetic benchmark does: a fixed set of random
// images and labels, so the measurement is the model's compute and communication alone.
//
// Settings used: resnet_depth (18 or 50), image_size (square, 3 channels), num_classes,
// dataset_size (synthetic training images, default 256), test_size (held-out synthetic images,
// default 64; labels are random, so accuracy stays at chance), seed, batch_size, lr.
// BatchNorm running statistics are per rank (as with DDP's broadcast_buffers=False): they only
// affect evaluation, never the gradients. Rank 0 evaluates; where it only serves (`ps`), it first
// takes the first training rank's (buffers()), since its own were never updated.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "harness/study/settings.h"

namespace harness {

class Workload;

inline constexpr int64_t kDefaultSyntheticImages = 256;
inline constexpr int64_t kDefaultSyntheticTestImages = 64;
// The synthetic training set is held in memory on every rank: at most this many bytes.
inline constexpr int64_t kMaxSyntheticBytes = int64_t{8} << 30;

// The settings the resnet workload owns (resnet_depth, image_size, num_classes).
struct ResnetOptions {
  int depth = 18;        // 18 or 50
  int image_size = 32;   // synthetic square RGB images of this side, pixels
  int num_classes = 10;  // of the random labels
};
ResnetOptions resnet_options(const PointSettings& settings);
std::vector<SettingRow> resnet_setting_rows();

// The largest dataset_size that fits kMaxSyntheticBytes at the point's image_size.
int64_t resnet_max_images(const PointSettings& settings);
std::unique_ptr<Workload> make_resnet(const PointSettings& settings, int cuda_device);

}  // namespace harness
