#include "harness/launch/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <iostream>

#include <fmt/format.h>

namespace harness {

Progress::Progress(int points_to_run, bool live) : points_to_run_(points_to_run), live_(live) {}

Progress::~Progress() { stop_ticker(); }

std::string Progress::estimate() const {
  if (finished_ == 0) return "";
  const int remaining = std::max(0, points_to_run_ - finished_);
  return format_duration(total_s_ / finished_ * remaining);
}

void Progress::start_point(const std::string& text) {
  stop_ticker();
  text_ = text;
  started_ = std::chrono::steady_clock::now();
  std::cout << text_ << std::flush;
  if (!live_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticking_ = true;
  }
  ticker_ = std::thread([this] { tick_loop(); });
}

void Progress::tick_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return !ticking_; })) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    // The point's elapsed time covers it; the estimate counts the points after it.
    const std::string left = finished_ > 0
                                 ? ", about " + format_duration(total_s_ / finished_ *
                                                                std::max(0, points_to_run_ - finished_ - 1) +
                                                                std::max(0.0, total_s_ / finished_ - elapsed)) +
                                       " left"
                                 : "";
    // "\r" and erase-line redraw only the last screen row, so the line must fit in one.
    std::string line = text_ + fmt::format("  running {}{}", format_duration(elapsed), left);
    winsize window{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &window) == 0 && window.ws_col > 1 &&
        line.size() >= window.ws_col) {
      line = line.substr(0, window.ws_col - 2) + "~";
    }
    std::cout << "\r\033[K" << line << std::flush;
  }
}

void Progress::stop_ticker() {
  if (!ticker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ticking_ = false;
  }
  wake_.notify_all();
  ticker_.join();
  // The final line may wrap: it is printed once, not redrawn.
  std::cout << "\r\033[K" << text_ << std::flush;
}

void Progress::finish_point(const std::string& outcome, double wall_time_s) {
  stop_ticker();
  ++finished_;
  total_s_ += wall_time_s;
  const std::string left = estimate();
  std::cout << outcome << (left.empty() || finished_ == points_to_run_ ? "" : ", about " + left + " left")
            << "\n"
            << std::flush;
}

void Progress::skip_point(const std::string& outcome) {
  stop_ticker();
  std::cout << outcome << "\n" << std::flush;
}

}  // namespace harness
