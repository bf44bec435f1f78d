// The distributed loop of the `kmeans` workload (workloads/kmeans.h): rank r of p takes the
// contiguous shard [r·n/p, (r+1)·n/p) of the points (disjoint, together all of them), and each
// iteration reduces one buffer with the point's backend. Every rank ends with the same centroids.
//
// Results are what the trainer reports (loop_result.h): an iteration is a step and an "epoch" (one
// pass over the data); train_loss and test_loss are the inertia per point (mean squared distance
// to the nearest centroid), test_accuracy is the purity against the true labels.
#pragma once

#include <vector>

#include "backends/gradient_sync.h"
#include "harness/study/settings.h"
#include "workloads/kmeans.h"
#include "workloads/loop_result.h"

namespace harness {

struct KMeansResult {
  LoopResult training;
  std::vector<float> centroids;  // k × dimensions, the same on every rank
  int iterations = 0;
  bool converged = false;        // stopped by kmeans_tolerance rather than by `epochs`
};

// Collective over `communicator`. With a `flush`, offers it the results so far between
// iterations (loop_result.h), its time left out of train_time_s.
KMeansResult run_distributed_kmeans(const KMeansData& data, GradientSync& backend,
                                    const Communicator& communicator, const PointSettings& settings,
                                    LoopFlush* flush = nullptr);

}  // namespace harness
