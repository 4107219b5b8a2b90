// The metrics log: StepMetrics <-> one JSON object per line, and a log file that a
// resumed run continues instead of overwriting.
#include "zero/train/metrics.h"

#include <cmath>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>

#include "zero/core/error.h"
#include "zero/io/atomic_file.h"

namespace zero::train {

std::string to_json_line(const StepMetrics& m) {
  nlohmann::ordered_json j;
  j["step"] = m.step;
  j["loss"] = m.loss;
  if (m.val_loss) j["val_loss"] = *m.val_loss;
  j["lr"] = m.lr;
  j["ms"] = m.ms;
  j["tokens_per_s"] = m.tokens_per_s;
  if (m.mfu) j["mfu"] = *m.mfu;
  j["mem_gib"] = m.mem_gib;
  if (m.dtype) j["dtype"] = *m.dtype;
  if (m.skipped) j["skipped"] = *m.skipped;
  if (m.loss_scale) j["loss_scale"] = *m.loss_scale;
  return j.dump();
}

StepMetrics from_json_line(const std::string& line) {
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    StepMetrics m;
    m.step = j.at("step").get<int64_t>();
    // A non-finite loss is written by nlohmann as null; read it back as NaN.
    m.loss = j.at("loss").is_null() ? NAN : j.at("loss").get<float>();
    if (j.contains("val_loss"))
      m.val_loss = j["val_loss"].is_null() ? NAN : j["val_loss"].get<float>();
    m.lr = j.at("lr").get<float>();
    m.ms = j.at("ms").get<double>();
    m.tokens_per_s = j.at("tokens_per_s").get<double>();
    if (j.contains("mfu")) m.mfu = j["mfu"].get<double>();
    m.mem_gib = j.at("mem_gib").get<double>();
    if (j.contains("dtype")) m.dtype = j["dtype"].get<std::string>();
    if (j.contains("skipped")) m.skipped = j["skipped"].get<int64_t>();
    if (j.contains("loss_scale")) m.loss_scale = j["loss_scale"].get<float>();
    return m;
  } catch (const nlohmann::json::exception& e) {
    ZERO_CHECK(false,
               "metrics: expected a JSON object with step, loss, lr, ms, tokens_per_s, "
               "mem_gib, got '",
               line, "' (", e.what(), ")");
  }
  return {};
}

std::string format_rate(double r) {
  char buf[32];
  if (r < 1e3) {
    std::snprintf(buf, sizeof(buf), "%.0f", r);
  } else if (r < 1e4) {
    std::snprintf(buf, sizeof(buf), "%.1fk", r / 1e3);
  } else if (r < 1e6) {
    std::snprintf(buf, sizeof(buf), "%.0fk", r / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2fM", r / 1e6);
  }
  return buf;
}

std::string format_log_line(const StepMetrics& m, int64_t max_steps) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "step %lld/%lld | loss %.4f | lr %.2e | %.1f ms | %s tok/s",
                static_cast<long long>(m.step), static_cast<long long>(max_steps), m.loss, m.lr,
                m.ms, format_rate(m.tokens_per_s).c_str());
  std::string line = buf;
  if (m.mfu) {
    std::snprintf(buf, sizeof(buf), " | mfu %.1f%%", *m.mfu * 100);
    line += buf;
  }
  if (m.mem_gib < 1) {
    std::snprintf(buf, sizeof(buf), " | mem %.0f MiB", m.mem_gib * 1024);
  } else {
    std::snprintf(buf, sizeof(buf), " | mem %.2f GiB", m.mem_gib);
  }
  line += buf;
  if (m.dtype) line += " | " + *m.dtype;
  if (m.loss_scale) {
    std::snprintf(buf, sizeof(buf), " | scale %g", *m.loss_scale);
    line += buf;
  }
  if (m.skipped && (m.loss_scale || *m.skipped > 0)) {
    line += " | skipped " + std::to_string(*m.skipped);
  }
  return line;
}

std::vector<StepMetrics> read_metrics(const std::string& path, int64_t* skipped) {
  std::vector<StepMetrics> records;
  int64_t bad = 0;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (in && std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      records.push_back(from_json_line(line));
    } catch (const Error&) {
      ++bad;
    }
  }
  if (skipped) *skipped = bad;
  return records;
}

void loss_points(const std::vector<StepMetrics>& records, std::vector<LossPoint>* train,
                 std::vector<LossPoint>* val) {
  for (const StepMetrics& m : records) {
    if (train) train->push_back({m.step, m.loss});
    if (val && m.val_loss) val->push_back({m.step, *m.val_loss});
  }
}

MetricsLog::MetricsLog(const std::string& path, int64_t resume_step) : path_(path) {
  if (resume_step >= 0) {
    for (const StepMetrics& m : read_metrics(path, &skipped_)) {
      if (m.step <= resume_step) records_.push_back(m);
    }
  }
  // The kept records replace the file in one atomic step; then append from there.
  std::string text;
  for (const StepMetrics& m : records_) text += to_json_line(m) + '\n';
  io::write_file_atomically(path, text);
  out_.open(path, std::ios::app);
  ZERO_CHECK(out_.good(), "MetricsLog: cannot open '", path, "' for writing");
}

void MetricsLog::Write(const StepMetrics& m) {
  out_ << to_json_line(m) << '\n';
  out_.flush();
  ZERO_CHECK(out_.good(), "MetricsLog: writing '", path_, "' failed (disk full?)");
  records_.push_back(m);
}

}  // namespace zero::train
