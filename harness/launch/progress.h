// The progress of a sweep on the console. On a terminal, the running point's line is redrawn
// every second with its elapsed time and the sweep's estimated time left; elsewhere (CI logs,
// pipes) every point gets one plain line, with the estimate after its outcome.
//
// Threading: start_point() starts a ticker thread on a terminal; stop_ticker() (called before
// anything else writes to the console) and finish_point() stop it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "harness/common/text.h"

namespace harness {


class Progress {
 public:
  // `points_to_run`: how many points this run will launch (kept ones excluded), for the estimate.
  Progress(int points_to_run, bool live);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Prints the point's line (no newline yet).
  void start_point(const std::string& text);
  // Stops redrawing and leaves the cursor after the point's text, so the caller can append.
  void stop_ticker();
  // Appends the outcome and ends the line; `wall_time_s` feeds the estimate.
  void finish_point(const std::string& outcome, double wall_time_s);
  // Ends the line of a point that was not launched (kept from an earlier run).
  void skip_point(const std::string& outcome);

  // The estimated time for the points not yet run, or "" before any finished.
  std::string estimate() const;

 private:
  void tick_loop();

  int points_to_run_;
  bool live_;
  int finished_ = 0;
  double total_s_ = 0;
  std::string text_;
  std::chrono::steady_clock::time_point started_;
  std::thread ticker_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool ticking_ = false;
};

}  // namespace harness
