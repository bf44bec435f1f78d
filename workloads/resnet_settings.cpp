// resnet's settings and memory bound, without LibTorch (resnet.h): validation reads them.
#include "workloads/resnet.h"

#include "harness/common/json_values.h"
#include "harness/study/owned_setting_rows.h"

namespace harness {

std::vector<SettingRow> resnet_setting_rows() {
  const ResnetOptions defaults;
  return {
      owned_setting("resnet_depth", "18 or 50", "workload resnet: ResNet-18 or ResNet-50",
                    R"({"enum": [18, 50]})", defaults.depth,
                    [](const Json& value, const std::string& where) {
                      const int64_t depth = read_integer(value, where, 18, 50, "18 or 50");
                      if (depth != 18 && depth != 50) fail_expected(where, "18 or 50", value);
                      return Json(depth);
                    }),
      owned_integer_setting("image_size", "an integer from 32 to 512", "workload resnet: synthetic image side, pixels", {32, 512}, defaults.image_size),
      owned_integer_setting("num_classes", "an integer from 2 to 100000", "workload resnet: classes of the random labels", {2, 100000}, defaults.num_classes),
  };
}

ResnetOptions resnet_options(const PointSettings& settings) {
  ResnetOptions options;
  options.depth = settings.option("resnet_depth", options.depth);
  options.image_size = settings.option("image_size", options.image_size);
  options.num_classes = settings.option("num_classes", options.num_classes);
  return options;
}

int64_t resnet_max_images(const PointSettings& settings) {
  const int64_t side = resnet_options(settings).image_size;
  const int64_t bytes_per_image = int64_t{3} * side * side * 4;
  return kMaxSyntheticBytes / bytes_per_image;
}

}  // namespace harness
