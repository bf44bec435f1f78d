// `torchscript`: a user's own network, exported from PyTorch with torch.jit.script(model).save(path)
// (or torch.jit.trace), trained like the built-in workloads: its parameters and buffers are the
// module's, every scheme and backend moves them, and the loss is the harness's (docs/own-model.md).
//
// The module takes one float tensor [batch, *input_shape] and returns one tensor [batch, classes]
// of logits (loss "cross_entropy") or outputs compared with the one-hot labels (loss "mse").
// Data (`model_data`): "synthetic" (random inputs and labels, as resnet's: the measurement is the
// model's compute and communication alone), "iris" (4 standardised measurements, 3 classes) or
// "mnist" (1 x 28 x 28 standardised images, 10 classes, from data_path as for mnist_cnn).
//
// Checked before launch, without LibTorch: the file exists and is a TorchScript archive (a zip with
// data.pkl and code/), and the shapes agree with the data. Checked by every rank when it loads the
// model, before any step: LibTorch can load it, and one forward pass on two samples returns one
// tensor [2, classes]; otherwise the point fails with that reason.
//
// Settings used: model_path, input_shape, classes, loss, model_data, data_path, dataset_size,
// test_size, seed (synthetic data; the weights are the file's), lr, batch_size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/study/settings.h"
#include "workloads/registry.h"

namespace harness {

class Workload;

struct TorchScriptOptions {
  std::string model_path;            // as the experiment names it
  std::vector<int64_t> input_shape;  // one sample's; empty: the data's (iris, mnist)
  int64_t classes = 0;               // 0: the data's (iris 3, mnist 10), else required
  std::string loss = "cross_entropy";  // or "mse"
  std::string data = "synthetic";      // "iris" or "mnist"
};
TorchScriptOptions torchscript_options(const PointSettings& settings);
std::vector<SettingRow> torchscript_setting_rows();

// One sample's shape and the classes of the point's data, with the data's defaults filled in.
struct TorchScriptShape {
  std::vector<int64_t> input_shape;
  int64_t classes = 0;
};
TorchScriptShape torchscript_shape(const PointSettings& settings);

// The model file the point names: model_path as written when it exists from the current
// directory (or is absolute), else under the harness's data folder (data/models/NAME.pt ships
// there, and installs to PREFIX/share/harness/data).
std::filesystem::path torchscript_model_file(const PointSettings& settings);

// Why `path` is not a TorchScript archive ("" when it is): missing, not a zip, a zip that
// torch.save wrote (no code/), ... Read from the zip's central directory alone.
std::string torchscript_archive_problem(const std::filesystem::path& path);

// Training samples: synthetic ones have a default and a memory bound; iris and mnist are fixed.
// Throws ConfigError "model_path: ..." for a file that is not a TorchScript archive.
SampleLimits torchscript_limits(const PointSettings& settings);

// What else it refuses before launch: shapes that disagree with iris or mnist data, a held-out
// target on random labels.
std::optional<SettingProblem> torchscript_check(const PointSettings& settings, const PointShape& shape);

std::unique_ptr<Workload> make_torchscript(const PointSettings& settings, int cuda_device);

}  // namespace harness
