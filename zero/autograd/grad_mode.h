/// @file
/// `NoGradGuard` and the thread-local switch that decides whether ops record a graph.
#pragma once

namespace zero {

/// Whether ops record themselves for `Backward()` on this thread (default: yes).
class GradMode {
 public:
  /// True when recording is on.
  static bool enabled();
  /// Turns recording on or off for this thread.
  static void set_enabled(bool enabled);
};

/// Turns gradient recording off for its lifetime (evaluation, optimiser updates,
/// generation), then restores the previous mode.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace zero
