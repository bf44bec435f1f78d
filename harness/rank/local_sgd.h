// Local SGD's exchange (scheme "local_sgd", schemes/registry.h): each training rank takes
// sync_every SGD steps on its own model, on its own batches, then every rank's model becomes the
// mean of the training ranks' models (Lin et al., "Don't Use Large Mini-Batches, Use Local SGD";
// the "lazy update" of the parameter-server study). With sync_every 1 that is synchronous SGD: the
// mean of p - lr·g_r over the ranks is p - lr·mean(g_r), up to rounding.
//
// The models are averaged as gradients are: through GradientBuckets over tensors shaped like the
// parameters, so every backend, device staging and bucket size that the synchronous scheme uses
// serves here too (nccl and cuda_ipc on GPUs). The optimizer is plain SGD, which keeps no state:
// there is nothing else to average. A rank that only serves (backend ps without ps_server_trains)
// computes nothing; it adds zeros to the sums, and the divisor is the number of training ranks, so
// it ends each averaging with the mean model too.
#pragma once

#include <torch/types.h>

#include <vector>

#include "backends/gradient_sync.h"
#include "harness/rank/gradient_buckets.h"

namespace harness {

class ModelAveraging {
 public:
  // `parameters` are the trainer's (checked dense float32); `trains`: whether this rank computes
  // gradients; `workers`: the training ranks, the divisor; `sync_every`: local steps between two
  // averagings. The parameters must outlive this.
  ModelAveraging(const std::vector<torch::Tensor>& parameters, GradientSync& backend, double bucket_mb, bool trains,
                 int workers, std::size_t staging_chunk_floats, int sync_every);

  // Collective, after each local step: averages the models when sync_every steps have passed
  // since the last averaging, or at an epoch's last step (so that every epoch ends with one model,
  // the one rank 0 evaluates); the count starts again after each averaging.
  void after_step(bool last_of_epoch);

 private:
  std::vector<torch::Tensor> parameters_;
  // Shaped like the parameters; their .grad are what the buckets sum.
  std::vector<torch::Tensor> shadows_;
  GradientBuckets buckets_;
  bool trains_;
  int sync_every_;
  int local_steps_ = 0;  // since the models were last averaged

  // Collective: every parameter becomes the mean over the training ranks of theirs.
  void average();
};

}  // namespace harness
