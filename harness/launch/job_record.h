// The record of a point whose job has ended: how it ended (the scheduler's JobEnd and reason),
// what rank 0 measured (complete, or partial when the job did not complete), where its time went.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/launch/job.h"
#include "harness/results/record.h"
#include "harness/study/sweep.h"

namespace harness {

struct EndedJob {
  const Point* point = nullptr;
  const JobSpec* job = nullptr;
  std::vector<std::string> command;  // what started its ranks
  std::string scheduler;             // the scheduler's name
  int threads_per_rank = 0;          // as the scheduler gave them (0: decided in the job)
  const JobResult* result = nullptr;
  std::optional<BuildProvenance> build;  // the named build whose rank program ran it, if any
};

// Builds the record from the job's measurements file, which it leaves in place: the caller removes
// it once the record is durable. `remark` gets the kind's remark on the measurements (a diverged
// loss), if any.
PointRecord record_of_ended_job(const std::string& experiment_name, const EndedJob& ended,
                                const std::vector<std::string>& command_line, std::string& remark);

// The status of a point whose job did not complete.
PointStatus point_status_of(JobEnd end);

}  // namespace harness
