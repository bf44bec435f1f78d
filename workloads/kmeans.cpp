#include "workloads/kmeans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/json_values.h"
#include "harness/common/shuffle.h"
#include "harness/study/owned_setting_rows.h"
#include "workloads/iris_data.h"

namespace harness {
namespace {

// Uniform in [0, 1) from the top 53 bits: the same on every compiler, unlike the <random>
// distributions, whose algorithms are implementation-defined.
double uniform01(std::mt19937_64& engine) { return static_cast<double>(engine() >> 11) * 0x1p-53; }

// Standard normal by Box-Muller, for the same reason.
double normal(std::mt19937_64& engine) {
  const double u1 = 1.0 - uniform01(engine);  // (0, 1]: log is finite
  const double u2 = uniform01(engine);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

KMeansData iris_points(const PointSettings& settings) {
  IrisData iris;
  try {
    iris = load_iris_csv(settings.data_path.empty() ? default_iris_path() : settings.data_path);
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("data_path: ") + error.what());
  }
  std::vector<int64_t> rows(static_cast<std::size_t>(iris.rows()));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  const int64_t used = settings.dataset_size > 0 ? settings.dataset_size : iris.rows();
  if (used < iris.rows()) {
    // The file lists the species one after another: a prefix of 50 rows would be setosa alone.
    // A seeded sample instead, kept in file order.
    deterministic_shuffle(rows, static_cast<uint64_t>(settings.seed), /*stream=*/3000);
    rows.resize(static_cast<std::size_t>(used));
    std::sort(rows.begin(), rows.end());
  }
  standardize(iris, rows);  // over the rows clustered
  KMeansData data;
  data.dimensions = IrisData::kFeatures;
  data.classes = IrisData::kClasses;
  for (const int64_t row : rows) {
    const auto first = iris.features.begin() + row * IrisData::kFeatures;
    data.points.insert(data.points.end(), first, first + IrisData::kFeatures);
    data.labels.push_back(static_cast<int32_t>(iris.labels[static_cast<std::size_t>(row)]));
  }
  return data;
}

// Blob centres uniform in [-10, 10]^d, points N(centre, 1); point i belongs to blob i mod k, so
// every prefix of the set holds all blobs in equal shares.
KMeansData blob_points(const PointSettings& settings) {
  const int k = kmeans_options(settings).k;
  const int64_t count = settings.dataset_size > 0 ? settings.dataset_size : kDefaultBlobPoints;
  std::mt19937_64 engine(static_cast<uint64_t>(settings.seed) * 0x9E3779B97F4A7C15ULL + 0xB10B);
  std::vector<double> centres(static_cast<std::size_t>(k) * kBlobDimensions);
  for (double& c : centres) c = -10.0 + 20.0 * uniform01(engine);
  KMeansData data;
  data.dimensions = kBlobDimensions;
  data.classes = k;
  data.points.resize(static_cast<std::size_t>(count) * kBlobDimensions);
  data.labels.resize(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const auto blob = static_cast<int32_t>(i % k);
    data.labels[i] = blob;
    for (int d = 0; d < kBlobDimensions; ++d) {
      data.points[i * kBlobDimensions + d] =
          static_cast<float>(centres[blob * kBlobDimensions + d] + normal(engine));
    }
  }
  return data;
}

float squared_distance(const float* a, const float* b, int dimensions) {
  float sum = 0;
  for (int d = 0; d < dimensions; ++d) {
    const float difference = a[d] - b[d];
    sum += difference * difference;
  }
  return sum;
}

}  // namespace

std::vector<SettingRow> kmeans_setting_rows() {
  const KMeansOptions defaults;
  return {
      owned_integer_setting("kmeans_k", "a positive integer (at most 4096)", "workload kmeans: number of clusters", {1, 4096}, defaults.k),
      owned_setting("kmeans_tolerance", "a positive number",
                    "workload kmeans: stop when no centroid moves farther than this",
                    R"({"type": "number", "exclusiveMinimum": 0})", defaults.tolerance,
                    [](const Json& value, const std::string& where) {
                      return Json(read_positive_number(value, where));
                    }),
      owned_setting("kmeans_data", "\"iris\" or \"blobs\"",
                    "workload kmeans: the Iris measurements, or dataset_size synthetic Gaussian-blob "
                    "points",
                    R"({"enum": ["iris", "blobs"]})", defaults.data,
                    [](const Json& value, const std::string& where) {
                      return Json(read_choice(value, where, {"iris", "blobs"}));
                    }),
  };
}

KMeansOptions kmeans_options(const PointSettings& settings) {
  KMeansOptions options;
  options.k = settings.option("kmeans_k", options.k);
  options.tolerance = settings.option("kmeans_tolerance", options.tolerance);
  options.data = settings.option("kmeans_data", options.data);
  return options;
}

KMeansData load_kmeans_data(const PointSettings& settings) {
  return kmeans_options(settings).data == "blobs" ? blob_points(settings) : iris_points(settings);
}

int64_t kmeans_available_points(const PointSettings& settings) {
  if (kmeans_options(settings).data == "blobs") return kMaxBlobPoints;
  try {
    return load_iris_csv(settings.data_path.empty() ? default_iris_path() : settings.data_path).rows();
  } catch (const ConfigError& error) {
    throw ConfigError(std::string("data_path: ") + error.what());
  }
}

std::vector<float> initial_centroids(const KMeansData& data, int k, uint64_t seed) {
  const int d = data.dimensions;
  const int64_t n = data.count();
  std::mt19937_64 engine(seed * 0x9E3779B97F4A7C15ULL + 0xCE17);
  std::vector<float> centroids;
  const auto add = [&](int64_t row) {
    centroids.insert(centroids.end(), &data.points[row * d], &data.points[row * d] + d);
  };
  const int64_t first = static_cast<int64_t>(engine() % static_cast<uint64_t>(n));
  add(first);
  std::vector<double> nearest(static_cast<std::size_t>(n));
  double potential = 0;
  for (int64_t i = 0; i < n; ++i) {
    nearest[i] = squared_distance(&data.points[i * d], &data.points[first * d], d);
    potential += nearest[i];
  }
  // Greedy k-means++ (as scikit-learn does): draw 2 + ln k candidates with probability
  // proportional to the squared distance to the nearest centre so far, keep the one that lowers
  // the total the most. Plain k-means++ (one candidate) more often puts two centres in one blob.
  const int trials = 2 + static_cast<int>(std::log(static_cast<double>(k)));
  std::vector<double> candidate_nearest(static_cast<std::size_t>(n));
  std::vector<double> best_nearest;
  for (int c = 1; c < k; ++c) {
    int64_t best = -1;
    double best_potential = std::numeric_limits<double>::max();
    for (int trial = 0; trial < trials; ++trial) {
      double target = uniform01(engine) * potential;
      int64_t candidate = n - 1;
      for (int64_t i = 0; i < n; ++i) {
        target -= nearest[i];
        if (target < 0) {
          candidate = i;
          break;
        }
      }
      double candidate_potential = 0;
      for (int64_t i = 0; i < n; ++i) {
        candidate_nearest[i] = std::min<double>(
            nearest[i], squared_distance(&data.points[i * d], &data.points[candidate * d], d));
        candidate_potential += candidate_nearest[i];
      }
      if (candidate_potential < best_potential) {
        best_potential = candidate_potential;
        best = candidate;
        best_nearest = candidate_nearest;
      }
    }
    add(best);
    nearest = best_nearest;
    potential = best_potential;
  }
  return centroids;
}

void accumulate_shard(const KMeansData& data, int64_t begin, int64_t end,
                      std::span<const float> centroids, const KMeansBufferLayout& layout,
                      std::span<float> buffer) {
  const int d = layout.dimensions;
  const int k = layout.k;
  std::vector<double> sums(static_cast<std::size_t>(k) * d, 0.0);
  std::vector<int64_t> counts(static_cast<std::size_t>(k), 0);
  std::vector<int64_t> label_counts(static_cast<std::size_t>(k) * layout.classes, 0);
  double inertia = 0;
  for (int64_t i = begin; i < end; ++i) {
    const float* point = &data.points[i * d];
    int best = 0;
    float best_distance = std::numeric_limits<float>::max();
    for (int c = 0; c < k; ++c) {
      const float distance = squared_distance(point, &centroids[static_cast<std::size_t>(c) * d], d);
      if (distance < best_distance) {  // ties go to the lower index, on every rank alike
        best_distance = distance;
        best = c;
      }
    }
    for (int j = 0; j < d; ++j) sums[static_cast<std::size_t>(best) * d + j] += point[j];
    ++counts[best];
    ++label_counts[static_cast<std::size_t>(best) * layout.classes + data.labels[i]];
    inertia += best_distance;
  }
  std::fill(buffer.begin(), buffer.end(), 0.0F);
  for (std::size_t i = 0; i < sums.size(); ++i) buffer[layout.sums() + i] = static_cast<float>(sums[i]);
  for (int c = 0; c < k; ++c) buffer[layout.counts() + c] = static_cast<float>(counts[c]);
  for (std::size_t i = 0; i < label_counts.size(); ++i) {
    buffer[layout.label_counts() + i] = static_cast<float>(label_counts[i]);
  }
  buffer[layout.inertia()] = static_cast<float>(inertia);
}

double update_centroids(std::span<const float> totals, const KMeansBufferLayout& layout,
                        std::vector<float>& centroids) {
  const int d = layout.dimensions;
  double largest_move = 0;
  for (int c = 0; c < layout.k; ++c) {
    const float count = totals[layout.counts() + c];
    if (count == 0) continue;
    double moved = 0;
    for (int j = 0; j < d; ++j) {
      float& centroid = centroids[static_cast<std::size_t>(c) * d + j];
      const float updated = totals[layout.sums() + static_cast<std::size_t>(c) * d + j] / count;
      moved += static_cast<double>(updated - centroid) * (updated - centroid);
      centroid = updated;
    }
    largest_move = std::max(largest_move, std::sqrt(moved));
  }
  return largest_move;
}

double purity(std::span<const float> totals, const KMeansBufferLayout& layout, int64_t points) {
  double majority = 0;
  for (int c = 0; c < layout.k; ++c) {
    const auto first = totals.begin() + static_cast<std::ptrdiff_t>(
                                            layout.label_counts() + static_cast<std::size_t>(c) * layout.classes);
    majority += *std::max_element(first, first + layout.classes);
  }
  return points > 0 ? majority / static_cast<double>(points) : 0;
}

}  // namespace harness
