// `kmeans`: Lloyd's algorithm, the classic machine-learning example of Allreduce. Each rank
// owns a contiguous shard of the points; an iteration assigns every local point to its nearest
// centroid and accumulates, per cluster, the coordinate sums, the point count, the count of each
// true label (for purity) and the squared distances (inertia). One allreduce of that buffer with
// the point's backend gives every rank the same totals, hence the same new centroids; the loop
// stops when no centroid moves more than kmeans_tolerance, or after `epochs` iterations.
//
// Data (kmeans_data): "iris" (all 150 rows, standardised features, k = 3 by default) or
// "blobs" (dataset_size points, default 100000, in kBlobDimensions dimensions around kmeans_k
// Gaussian centres, generated from the seed). Initial centroids: greedy k-means++ from the seed, on
// every rank alike.
//
// This file holds the data and the per-shard arithmetic (no MPI); harness/kmeans_driver.h runs
// the distributed loop.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "harness/study/settings.h"

namespace harness {

// The settings the kmeans workload owns (kmeans_k, kmeans_tolerance, kmeans_data).
struct KMeansOptions {
  int k = 3;                    // clusters (and blobs)
  double tolerance = 1e-4;      // stop when no centroid moves farther than this
  std::string data = "iris";    // "iris" or "blobs"
};
KMeansOptions kmeans_options(const PointSettings& settings);
std::vector<SettingRow> kmeans_setting_rows();

inline constexpr int kBlobDimensions = 8;
inline constexpr int64_t kDefaultBlobPoints = 100'000;
// Counts travel as float32, exact up to 2^24: more points could make a cluster's count inexact.
inline constexpr int64_t kMaxBlobPoints = 16'000'000;

struct KMeansData {
  int dimensions = 0;
  int classes = 0;              // distinct true labels
  std::vector<float> points;    // count() × dimensions, row-major
  std::vector<int32_t> labels;  // true class per point (species, or generating blob)
  int64_t count() const { return static_cast<int64_t>(labels.size()); }
};

// The points a point's settings select. Throws ConfigError ("data_path: ...") for unreadable data.
KMeansData load_kmeans_data(const PointSettings& settings);
// How many Iris points there are, for validation before launch (blobs: kMaxBlobPoints).
int64_t kmeans_available_points(const PointSettings& settings);

// Greedy k-means++ seeding (Arthur and Vassilvitskii 2007), deterministic for a seed.
std::vector<float> initial_centroids(const KMeansData& data, int k, uint64_t seed);

// Layout of the buffer one iteration reduces, in floats.
struct KMeansBufferLayout {
  int k = 0;
  int dimensions = 0;
  int classes = 0;
  std::size_t sums() const { return 0; }                                       // k × dimensions
  std::size_t counts() const { return sums() + static_cast<std::size_t>(k) * dimensions; }  // k
  std::size_t label_counts() const { return counts() + k; }                     // k × classes
  std::size_t inertia() const { return label_counts() + static_cast<std::size_t>(k) * classes; }
  std::size_t size() const { return inertia() + 1; }
};

// Assigns points [begin, end) to their nearest centroid and writes their contributions into
// `buffer` (size layout.size(), overwritten). Sums are accumulated in double, then rounded once.
void accumulate_shard(const KMeansData& data, int64_t begin, int64_t end,
                      std::span<const float> centroids, const KMeansBufferLayout& layout,
                      std::span<float> buffer);

// New centroids from reduced totals (an empty cluster keeps its centroid); returns the largest
// distance any centroid moved.
double update_centroids(std::span<const float> totals, const KMeansBufferLayout& layout,
                        std::vector<float>& centroids);

// Fraction of points whose cluster's most frequent true label is their own.
double purity(std::span<const float> totals, const KMeansBufferLayout& layout, int64_t points);

}  // namespace harness
