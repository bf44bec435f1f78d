#include "harness/launch/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "harness/common/clock.h"

namespace harness {

Progress::Progress(int points_to_run, bool live, int parallel, std::ostream& out, bool queued)
    : points_to_run_(points_to_run), live_(live), parallel_(std::max(1, parallel)), out_(out), queued_(queued) {
  if (live_) ticker_ = std::thread([this] { tick_loop(); });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  clear_running_line();
  if (!open_line_.empty()) out_ << open_line_ << "\n" << std::flush;
}

std::string Progress::estimate() const {
  if (finished_ == 0 || queued_) return "";
  const int remaining = std::max(0, points_to_run_ - finished_);
  return format_duration(total_s_ / finished_ * remaining / parallel_);
}

// The time left with a point `elapsed` seconds into its run (one point at a time): the points
// after it, and the rest of it.
std::string Progress::left_text(double elapsed) const {
  if (finished_ == 0 || queued_) return "";
  const double mean = total_s_ / finished_;
  const int after = std::max(0, points_to_run_ - finished_ - static_cast<int>(running_.size()));
  const double left = (mean * after) / parallel_ + std::max(0.0, mean - elapsed);
  return ", about " + format_duration(left) + " left";
}

void Progress::clear_running_line() {
  if (!drawn_) return;
  out_ << "\r\033[K";
  if (parallel_ == 1 && !open_line_.empty()) out_ << open_line_;  // the point's own line stays
  out_ << std::flush;
  drawn_ = false;
}

void Progress::draw_running_line() {
  if (!live_ || running_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  std::string line;
  if (parallel_ == 1) {
    const auto& [label, start] = *running_.begin();
    const double elapsed = seconds_between(start, now);
    line = label + fmt::format("  running {}{}", format_duration(elapsed), left_text(elapsed));
  } else {
    for (const auto& [label, start] : running_) {
      // "[3/18] p002-1a2b3c4d ..." -> "p002 (12 s)"
      const auto id_start = label.find("] ");
      const std::string id = label.substr(id_start == std::string::npos ? 0 : id_start + 2, 4);
      line += fmt::format("{}{} ({})", line.empty() ? "running " : ", ", id,
                          format_duration(seconds_between(start, now)));
    }
    if (const std::string left = estimate(); !left.empty()) line += ", about " + left + " left";
  }
  // "\r" and erase-line redraw only the last screen row, so the line must fit in one.
  winsize window{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &window) == 0 && window.ws_col > 1 && line.size() >= window.ws_col) {
    line = line.substr(0, window.ws_col - 2) + "~";
  }
  out_ << "\r\033[K" << line << std::flush;
  drawn_ = true;
}

void Progress::tick_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
    draw_running_line();
  }
}

void Progress::started(const std::string& label) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_[label] = std::chrono::steady_clock::now();
  if (parallel_ == 1) {
    clear_running_line();
    open_line_ = label;
    out_ << label << std::flush;
  } else if (!live_) {
    out_ << label << (queued_ ? " submitted\n" : " started\n") << std::flush;
  }
}

void Progress::finished(const std::string& label, const std::string& outcome, double wall_time_s,
                        const std::vector<std::string>& details) {
  std::lock_guard<std::mutex> lock(mutex_);
  clear_running_line();
  running_.erase(label);
  ++finished_;
  total_s_ += wall_time_s;
  const std::string left = estimate();
  const std::string tail =
      left.empty() || finished_ >= points_to_run_ ? "" : ", about " + left + " left";
  if (parallel_ == 1 && open_line_ == label) {
    // The point's line is on the screen (redrawn on a terminal: print it whole once more).
    out_ << (live_ ? "\r\033[K" + label : "") << outcome << tail << "\n";
    open_line_.clear();
  } else {
    out_ << label << outcome << tail << "\n";
  }
  for (const auto& line : details) out_ << line << "\n";
  out_ << std::flush;
  draw_running_line();
}

void Progress::kept(const std::string& label, const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  clear_running_line();
  out_ << label << outcome << "\n" << std::flush;
  draw_running_line();
}

}  // namespace harness
