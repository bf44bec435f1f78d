// PointKey (harness/study/point_key.h): what makes two points the same measurement.
#include "harness/study/point_key.h"

#include <gtest/gtest.h>

#include <string>

#include "harness/study/settings.h"

namespace harness {
namespace {

// The identity of a measurement: its settings and repeat, not the harness version nor the point's
// position, and the text (not only the hash) decides equality.
TEST(PointKey, IsTheSettingsAndTheRepeat) {
  PointSettings settings;
  settings.ranks = 2;
  const PointKey key(settings, 1);
  Json spelled = to_json(settings);
  spelled.erase("build");  // the running harness's points keep the keys they had before builds (builds_test.cpp)
  spelled.erase("inject_compute_delay_ms");  // likewise an undelayed point, before the compute delay existed
  spelled.erase("inject_compute_delay_rank");
  spelled.erase("ring_allreduce_below_chunk_bytes");  // and the settings added later, at their defaults
  spelled.erase("cuda_ipc_one_shot_below_bytes");
  spelled.erase("cuda_ipc_device_arrivals");
  spelled.erase("staging_chunk_bytes");
  spelled.erase("shm_reduce_threads");
  spelled.erase("shm_copy_engine_gathers");
  spelled.erase("scheme");
  spelled.erase("sync_every");
  spelled.erase("ps_servers");
  spelled.erase("max_staleness");
  spelled.erase("target");
  spelled.erase("pipeline_stages");
  spelled.erase("micro_batches");
  spelled.erase("pipeline_schedule");
  spelled.erase("stage_boundaries");
  for (const char* key_of_a_later_workload : {"model_path", "input_shape", "classes", "loss", "model_data", "n_layer",
                                               "n_head", "d_model", "seq_len", "vocab"}) {
    spelled.erase(key_of_a_later_workload);  // torchscript's and gpt's (record version 18)
  }
  EXPECT_EQ(key.text(), spelled.dump() + "|1");
  // A gpt point's model is part of its key.
  PointSettings wider = settings;
  wider.workload = "gpt";
  const PointKey tiny(wider, 1);
  apply_setting(wider, "d_model", 128, "test");
  EXPECT_NE(PointKey(wider, 1), tiny);
  // A scheme other than sync, or another period, is part of the key.
  PointSettings local = settings;
  local.scheme = "local_sgd";
  EXPECT_NE(PointKey(local, 1), key);
  PointSettings every_two = local;
  apply_setting(every_two, "sync_every", 2, "test");
  EXPECT_NE(PointKey(every_two, 1), PointKey(local, 1));
  // Set to anything else, it is part of the key.
  PointSettings pure_ring = settings;
  pure_ring.options["ring_allreduce_below_chunk_bytes"] = 0;
  EXPECT_NE(PointKey(pure_ring, 1), key);
  PointSettings two_shot = settings;
  apply_setting(two_shot, "cuda_ipc_one_shot_below_bytes", 0, "test");
  EXPECT_NE(PointKey(two_shot, 1), key);
  EXPECT_NE(PointKey(two_shot, 1).text().find(R"("cuda_ipc_one_shot_below_bytes":0)"), std::string::npos);
  apply_setting(two_shot, "cuda_ipc_one_shot_below_bytes", 16777216, "test");
  EXPECT_EQ(PointKey(two_shot, 1), key) << "set to its default, as before it existed";
  PointSettings chunks = settings;
  apply_setting(chunks, "staging_chunk_bytes", 16777216, "test");
  EXPECT_NE(PointKey(chunks, 1), key);
  apply_setting(chunks, "staging_chunk_bytes", 4194304, "test");
  EXPECT_EQ(PointKey(chunks, 1), key) << "set to its default, as before it existed";
  PointSettings threads = settings;
  apply_setting(threads, "shm_reduce_threads", 4, "test");
  EXPECT_NE(PointKey(threads, 1), key);
  apply_setting(threads, "shm_reduce_threads", 1, "test");
  EXPECT_NE(PointKey(threads, 1), key) << "its default is \"auto\" since record schema 14";
  apply_setting(threads, "shm_reduce_threads", "auto", "test");
  EXPECT_EQ(PointKey(threads, 1), key) << "set to its default, as before it existed";
  PointSettings gathers = settings;
  apply_setting(gathers, "shm_copy_engine_gathers", true, "test");
  EXPECT_NE(PointKey(gathers, 1), key);
  apply_setting(gathers, "shm_copy_engine_gathers", "auto", "test");
  EXPECT_EQ(PointKey(gathers, 1), key) << "set to its default, as before it existed";
  PointSettings host_arrivals = settings;
  apply_setting(host_arrivals, "cuda_ipc_device_arrivals", false, "test");
  EXPECT_NE(PointKey(host_arrivals, 1), key);
  // A delay is part of the key, with its rank; without a delay the rank is not.
  PointSettings delayed = settings;
  delayed.inject_compute_delay_ms = 20;
  EXPECT_NE(PointKey(delayed, 1), key);
  PointSettings other_rank = delayed;
  other_rank.inject_compute_delay_rank = 1;
  EXPECT_NE(PointKey(other_rank, 1), PointKey(delayed, 1));
  PointSettings undelayed_rank = settings;
  undelayed_rank.inject_compute_delay_rank = 1;
  EXPECT_EQ(PointKey(undelayed_rank, 1), key);
  EXPECT_EQ(key.hash().size(), 8U);
  EXPECT_EQ(key, PointKey(settings, 1));
  EXPECT_NE(key, PointKey(settings, 0));
  settings.lr = 0.5;
  EXPECT_NE(key, PointKey(settings, 1));
  EXPECT_EQ(point_id(3, key), "p003-" + key.hash());
}

}  // namespace
}  // namespace harness
