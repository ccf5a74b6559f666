// The progress line of a long run: one line on standard error, rewritten in
// place while the run goes on and erased when it ends, shown only where
// standard error is a terminal (a log or a pipe gets none).
#ifndef BACKENDLAB_TOOLS_PROGRESS_H_
#define BACKENDLAB_TOOLS_PROGRESS_H_

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

namespace backendlab::tools {

class ProgressLine {
 public:
  ProgressLine() : on_(isatty(STDERR_FILENO) != 0) {}
  ~ProgressLine() { Clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // What a module's `progress` option takes: empty where there is no
  // terminal to show it on.
  std::function<void(const std::string&)> Callback() {
    if (!on_) return nullptr;
    return [this](const std::string& line) {
      std::fprintf(stderr, "\r%s\033[K", line.c_str());
      shown_ = true;
    };
  }
  // Erases the line, if one is shown: before the run's own output.
  void Clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool on_;
  bool shown_ = false;
};

}  // namespace backendlab::tools

#endif  // BACKENDLAB_TOOLS_PROGRESS_H_
