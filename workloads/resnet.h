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
// affect evaluation, never the gradients.
#pragma once

#include <cstdint>
#include <memory>

#include "harness/study/settings.h"

namespace harness {

class Workload;

inline constexpr int64_t kDefaultSyntheticImages = 256;
inline constexpr int64_t kDefaultSyntheticTestImages = 64;
// The synthetic training set is held in memory on every rank: at most this many bytes.
inline constexpr int64_t kMaxSyntheticBytes = int64_t{8} << 30;

// The largest dataset_size that fits kMaxSyntheticBytes at the point's image_size.
int64_t resnet_max_images(const PointSettings& settings);
std::unique_ptr<Workload> make_resnet(const PointSettings& settings);

}  // namespace harness
