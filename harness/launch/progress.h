// The progress of a sweep on the console.
//
// One point at a time (the default): the point's line is printed when it starts and its outcome
// appended when it ends; on a terminal the line is redrawn every second with the elapsed time and
// the time left. Several points at a time: each start and each end is a line of its own, and on a
// terminal one line below them, redrawn every second, lists the running points. Elsewhere (CI
// logs, pipes) nothing is ever redrawn.
//
// Threading: a ticker thread redraws on a terminal; every method takes the same lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/common/text.h"

namespace harness {

class Progress {
 public:
  // `points_to_run`: how many points this run will launch (kept ones excluded), for the estimate;
  // `parallel`: how many may run at once. A cluster's jobs (`queued`) wait in its queue: they are
  // "submitted", not "started", and no time left is estimated.
  Progress(int points_to_run, bool live, int parallel = 1, std::ostream& out = std::cout,
           bool queued = false);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A point's job started; `label` ("[3/18] p002-... mnist_cnn allreduce ranks=2") names it.
  void started(const std::string& label);
  // It ended: `outcome` (" ok (5.1 s)", " FAILED: ...") ends its line, `details` follow it.
  void finished(const std::string& label, const std::string& outcome, double wall_time_s,
                const std::vector<std::string>& details = {});
  // A point that was not launched (kept from an earlier run).
  void kept(const std::string& label, const std::string& outcome);

  // The estimated time for the points not yet run, or "" before any finished.
  std::string estimate() const;

 private:
  void tick_loop();
  void clear_running_line();   // caller holds mutex_
  void draw_running_line();    // caller holds mutex_
  std::string left_text(double elapsed_of_current) const;

  int points_to_run_;
  bool live_;
  int parallel_;
  std::ostream& out_;
  bool queued_;
  int finished_ = 0;
  double total_s_ = 0;
  std::map<std::string, std::chrono::steady_clock::time_point> running_;  // label -> start
  std::string open_line_;  // one point at a time: the label printed without its end yet
  bool drawn_ = false;     // a running line is on the screen
  std::thread ticker_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace harness
