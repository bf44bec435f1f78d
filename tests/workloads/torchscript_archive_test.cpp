// What validation says of a model_path before anything runs (torchscript_settings.cpp): read from
// the file's zip directory alone, without LibTorch.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "workloads/torchscript.h"

namespace harness {
namespace {

const std::filesystem::path kSource = HARNESS_SOURCE_DIR;

TEST(TorchScriptArchive, TheShippedExportsAreTorchScriptArchives) {
  EXPECT_EQ(torchscript_archive_problem(kSource / "data/models/mnist_cnn.pt"), "");
  EXPECT_EQ(torchscript_archive_problem(kSource / "data/models/fashion_convnet.pt"), "");
}

TEST(TorchScriptArchive, EachWrongFileIsToldWhatItIs) {
  EXPECT_EQ(torchscript_archive_problem(kSource / "data/models/no_such_model.pt"), "no such file");
  EXPECT_EQ(torchscript_archive_problem(kSource / "data/models"), "not a regular file");
  EXPECT_EQ(torchscript_archive_problem(kSource / "data/iris.csv"), "not a zip archive (TorchScript archives are)");
  EXPECT_EQ(torchscript_archive_problem(kSource / "tests/fixtures/models/state_dict.pt"),
            "a PyTorch archive without TorchScript code (saved by torch.save; export with "
            "torch.jit.script(model).save(path))");
  // A zip cut short loses its directory, which is at its end.
  const auto cut = std::filesystem::temp_directory_path() / "harness_cut_model.pt";
  std::filesystem::copy_file(kSource / "data/models/fashion_convnet.pt", cut,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, 100000);
  EXPECT_EQ(torchscript_archive_problem(cut), "not a zip archive (TorchScript archives are)");
  std::filesystem::remove(cut);
}

TEST(TorchScriptArchive, ARelativeModelPathIsFoundInTheDataFolderWhenNotHere) {
  PointSettings settings;
  settings.workload = "torchscript";
  apply_setting(settings, "model_path", "models/fashion_convnet.pt", "test");
  EXPECT_EQ(torchscript_model_file(settings), kSource / "data/models/fashion_convnet.pt");
  apply_setting(settings, "model_path", "/no/such/model.pt", "test");
  EXPECT_EQ(torchscript_model_file(settings), "/no/such/model.pt");
}

}  // namespace
}  // namespace harness
