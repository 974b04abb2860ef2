// Fitting the replay's cost model: robust weighted least squares per term
// (see cost_model.h), with a note wherever a term had no samples.
#include "ringscope/autotune/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <Eigen/Dense>

#include "ringscope/planning/allreduce_choice.h"  // the runtime's algorithm choice (runtime/src)

namespace ringscope::autotune {
namespace {

double median(std::vector<double> v) { return quantile(std::move(v), 0.5); }

// Buffers the runtime would allreduce by recursive doubling at 3+ ranks.
bool is_small_allreduce(int64_t bytes) {
  return bytes <= static_cast<int64_t>(kSmallAllreduceBytes);
}

// Affine fit of (units, ns) pairs; a single distinct unit count gives a pure
// per-unit (through the origin) or pure alpha (units 0) fit.
Affine fit_affine(const std::vector<std::pair<double, double>>& points, bool relative = true) {
  Affine a;
  a.samples = static_cast<int>(points.size());
  if (points.empty()) return a;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& [units, ns] : points) {
    x.push_back({1.0, units});
    y.push_back(ns);
  }
  std::vector<double> coef;
  if (fit_linear(x, y, &coef, relative)) a.alpha_ns = coef[0], a.per_unit_ns = coef[1];
  return a;
}

// Whole-span and step costs: plain least squares, i.e. the mean time at each
// size. The score sums these times, and a step that waited for a late peer
// is part of that sum (fits to medians underestimated the recorded ring time
// by 20-54%).
Affine fit_bytes(const std::vector<CalibrationSamples::BytesDuration>& samples) {
  std::vector<std::pair<double, double>> points;
  for (const auto& s : samples)
    points.emplace_back(static_cast<double>(s.bytes), static_cast<double>(s.dur_ns));
  return fit_affine(points, /*relative=*/false);
}

// alpha + per_member * members + per_byte * bytes.
void fit_copies(const std::vector<CalibrationSamples::Copy>& samples, double* alpha,
                double* per_member, double* per_byte) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& s : samples) {
    x.push_back({1.0, static_cast<double>(s.members), static_cast<double>(s.bytes)});
    y.push_back(static_cast<double>(s.dur_ns));
  }
  std::vector<double> coef;
  if (fit_linear(x, y, &coef)) *alpha = coef[0], *per_member = coef[1], *per_byte = coef[2];
}

}  // namespace

bool fit_linear(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                std::vector<double>* coef, bool relative) {
  if (x.empty() || x.size() != y.size()) return false;
  const size_t k = x[0].size();
  // Median y per distinct feature vector (relative), or every sample as is.
  std::vector<std::vector<double>> px;
  std::vector<double> py;
  if (relative) {
    std::map<std::vector<double>, std::vector<double>> groups;
    for (size_t i = 0; i < x.size(); ++i) groups[x[i]].push_back(y[i]);
    for (auto& [features, ys] : groups) {
      px.push_back(features);
      py.push_back(median(ys));
    }
  } else {
    px = x;
    py = y;
  }
  coef->assign(k, 0.0);
  std::vector<bool> active(k, true);
  for (size_t round = 0; round < k; ++round) {
    std::vector<size_t> cols;
    for (size_t j = 0; j < k; ++j)
      if (active[j]) cols.push_back(j);
    if (cols.empty()) return true;
    Eigen::MatrixXd a(px.size(), cols.size());
    Eigen::VectorXd b(px.size());
    for (size_t i = 0; i < px.size(); ++i) {
      const double w = relative ? 1.0 / std::max(std::abs(py[i]), 1.0) : 1.0;
      for (size_t c = 0; c < cols.size(); ++c) a(i, c) = w * px[i][cols[c]];
      b[i] = w * py[i];
    }
    // Complete orthogonal decomposition: the minimum-norm solution when a
    // feature does not vary (e.g. every copy had one member).
    Eigen::VectorXd sol = a.completeOrthogonalDecomposition().solve(b);
    size_t worst = k;
    double worst_value = 0;
    for (size_t c = 0; c < cols.size(); ++c) {
      (*coef)[cols[c]] = sol[c];
      if (sol[c] < worst_value) worst_value = sol[c], worst = cols[c];
    }
    if (worst == k) return true;
    active[worst] = false;
    (*coef)[worst] = 0.0;
  }
  return true;
}

double CostModel::allreduce_ns(int64_t bytes) const {
  const int n = std::max(1, world_size);
  if (mpi_allreduce) return mpi_allreduce_cost.at(static_cast<double>(bytes));
  if (shm_allreduce.samples > 0 && use_shared_memory(static_cast<size_t>(bytes), n))
    return shm_allreduce.at(static_cast<double>(bytes));
  const double overhead = overhead_ns(bytes);
  if (n == 1 || bytes == 0) return overhead;
  if (ring_only) return overhead + 2.0 * (n - 1) * ring_step.at(static_cast<double>(bytes) / n);
  if (ring_step.samples == 0 && rd_step.samples == 0 && shm_allreduce.samples > 0)
    return shm_allreduce.at(static_cast<double>(bytes));  // see the note in fit_cost_model
  if (bytes > 0 && use_recursive_doubling(static_cast<size_t>(bytes), n) && rd_step.samples > 0) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    const int steps = static_cast<int>(std::log2(p)) + (n > p ? 2 : 0);
    return overhead + steps * rd_step.at(static_cast<double>(bytes));
  }
  if (bytes > 0 && use_halving_doubling(static_cast<size_t>(bytes), n)) {
    // Exchanges of 1/2, 1/4, ... 1/n of the buffer, each way (ring-step kinds).
    double steps = 0;
    for (int part = 2; part <= n; part *= 2)
      steps += ring_step.at(static_cast<double>(bytes) / part);
    return overhead + 2.0 * steps;
  }
  const double step_bytes = static_cast<double>(bytes) / n;
  return overhead + 2.0 * (n - 1) * ring_step.at(step_bytes);
}

double CostModel::reducescatter_ns(int64_t bytes) const {
  const int n = std::max(1, world_size);
  const double overhead = overhead_ns(bytes);
  if (n == 1 || bytes == 0) return overhead;
  if (ring_step.samples == 0) return 0.5 * allreduce_ns(bytes);
  return overhead + (n - 1) * ring_step.at(static_cast<double>(bytes) / n);
}

double CostModel::alltoall_ns(int64_t bytes) const { return reducescatter_ns(bytes); }

double CostModel::copy_in_ns(int64_t bytes, int members) const {
  return copy_in_alpha_ns + copy_in_per_member_ns * members +
         copy_in_per_byte_ns * static_cast<double>(bytes);
}

double CostModel::copy_out_ns(int64_t bytes, int members) const {
  return copy_out_alpha_ns + copy_out_per_member_ns * members +
         copy_out_per_byte_ns * static_cast<double>(bytes);
}

std::string CostModel::describe() const {
  char buf[2048];
  std::snprintf(
      buf, sizeof buf,
      "ring step: alpha %.1f us, beta %.2f GB/s (%d samples)\n"
      "recursive doubling step: alpha %.1f us, beta %.2f GB/s (%d samples)\n"
      "shared-memory allreduce: alpha %.1f us, beta %.2f GB/s (%d samples)\n"
      "collective overhead: %.1f us + %.3f ms/MB\n"
      "copy in: %.1f us + %.2f us/member + %.3f ms/MB; copy out: %.1f us + %.2f us/member + "
      "%.3f ms/MB (unfused groups copying in/out: %.0f%%/%.0f%%)\n"
      "callbacks: %.1f us + %.2f us/response\n"
      "negotiation: fast %.1f us; slow %.1f us + %.2f us/response (%d samples)\n",
      ring_step.alpha_ns / 1e3, ring_gbps(), ring_step.samples, rd_step.alpha_ns / 1e3,
      rd_step.per_unit_ns > 0 ? 1.0 / rd_step.per_unit_ns : 0.0, rd_step.samples,
      shm_allreduce.alpha_ns / 1e3,
      shm_allreduce.per_unit_ns > 0 ? 1.0 / shm_allreduce.per_unit_ns : 0.0, shm_allreduce.samples,
      collective_overhead.alpha_ns / 1e3, collective_overhead.per_unit_ns, copy_in_alpha_ns / 1e3,
      copy_in_per_member_ns / 1e3, copy_in_per_byte_ns, copy_out_alpha_ns / 1e3,
      copy_out_per_member_ns / 1e3, copy_out_per_byte_ns, 100 * unfused_copy_in_fraction,
      100 * unfused_copy_out_fraction, callback.alpha_ns / 1e3, callback.per_unit_ns / 1e3,
      negotiate_fast_ns / 1e3, negotiate_slow.alpha_ns / 1e3, negotiate_slow.per_unit_ns / 1e3,
      negotiate_slow.samples);
  std::string out = buf;
  for (const std::string& n : notes) out += "note: " + n + "\n";
  return out;
}

Status fit_cost_model(const CalibrationSamples& s, int world_size, bool mpi_allreduce,
                      CostModel* out) {
  *out = CostModel{};
  out->world_size = std::max(1, world_size);
  out->mpi_allreduce = mpi_allreduce;
  out->ring_step = fit_bytes(s.ring_steps);
  out->rd_step = fit_bytes(s.rd_steps);
  out->shm_allreduce = fit_bytes(s.shm_allreduces);
  out->mpi_allreduce_cost = fit_bytes(s.mpi_allreduces);
  out->allgather = fit_bytes(s.allgathers);
  out->broadcast = fit_bytes(s.broadcasts);
  if (world_size > 1 && !mpi_allreduce && s.ring_steps.empty() && s.rd_steps.empty() &&
      s.shm_allreduces.empty())
    return Status(StatusCode::kInvalidArgument,
                  "no ring, recursive-doubling or shared-memory allreduce recorded: cannot "
                  "calibrate the allreduce cost");
  if (world_size > 1 && !mpi_allreduce && s.ring_steps.empty() && s.rd_steps.empty())
    out->notes.push_back(
        "only shared-memory allreduces recorded: ring allreduces are priced like them");
  if (mpi_allreduce && s.mpi_allreduces.empty())
    return Status(StatusCode::kInvalidArgument,
                  "the run used MPI_Allreduce but recorded no MPI_ALLREDUCE span");
  if (s.ring_steps.empty() && !s.rd_steps.empty()) {
    out->ring_step = out->rd_step;  // same links, whole buffer per exchange
    out->notes.push_back("no ring steps recorded: ring steps use the recursive-doubling fit");
  }
  if (!s.collective_overhead.empty()) {
    // The largest 5% are left out (the run's first collective pays for page
    // faults); then alpha from the small buffers, the slope from the rest.
    auto samples = s.collective_overhead;
    std::sort(samples.begin(), samples.end(),
              [](const auto& a, const auto& b) { return a.dur_ns < b.dur_ns; });
    samples.resize(samples.size() - samples.size() / 20);
    double small_sum = 0;
    int small_count = 0;
    for (const auto& o : samples)
      if (is_small_allreduce(o.bytes))
        small_sum += static_cast<double>(std::max<int64_t>(0, o.dur_ns)), ++small_count;
    Affine& a = out->collective_overhead;
    a.samples = static_cast<int>(samples.size());
    a.alpha_ns = small_count > 0 ? small_sum / small_count : 0.0;
    double xy = 0, xx = 0;
    for (const auto& o : samples) {
      if (is_small_allreduce(o.bytes)) continue;
      const double x = static_cast<double>(o.bytes);
      xy += x * (static_cast<double>(std::max<int64_t>(0, o.dur_ns)) - a.alpha_ns);
      xx += x * x;
    }
    a.per_unit_ns = xx > 0 ? std::max(0.0, xy / xx) : 0.0;
    if (small_count == 0 && xx > 0) {  // no small buffer: a plain line through the rest
      std::vector<std::vector<double>> x;
      std::vector<double> y;
      for (const auto& o : samples) {
        x.push_back({1.0, static_cast<double>(o.bytes)});
        y.push_back(static_cast<double>(std::max<int64_t>(0, o.dur_ns)));
      }
      std::vector<double> coef;
      if (fit_linear(x, y, &coef, /*relative=*/false))
        a.alpha_ns = coef[0], a.per_unit_ns = coef[1];
    }
  }
  fit_copies(s.copy_in, &out->copy_in_alpha_ns, &out->copy_in_per_member_ns,
             &out->copy_in_per_byte_ns);
  fit_copies(s.copy_out, &out->copy_out_alpha_ns, &out->copy_out_per_member_ns,
             &out->copy_out_per_byte_ns);
  if (s.copy_in.empty() && !s.copy_out.empty()) {
    // Fusion off in the recorded run: copying in streams the same bytes as
    // scaling out, so it gets the copy-out fit.
    out->copy_in_alpha_ns = out->copy_out_alpha_ns;
    out->copy_in_per_member_ns = out->copy_out_per_member_ns;
    out->copy_in_per_byte_ns = out->copy_out_per_byte_ns;
    out->notes.push_back("no MEMCPY_IN recorded (fusion off?): copy-in uses the copy-out fit");
  } else if (s.copy_in.empty()) {
    out->notes.push_back("no MEMCPY_IN or MEMCPY_OUT recorded: fusion copies cost 0");
  }
  if (s.unfused_groups > 0) {
    out->unfused_copy_in_fraction = static_cast<double>(s.unfused_copy_in) / s.unfused_groups;
    out->unfused_copy_out_fraction = static_cast<double>(s.unfused_copy_out) / s.unfused_groups;
  }
  std::vector<std::pair<double, double>> cb;
  for (const auto& c : s.callbacks) cb.emplace_back(c.responses, static_cast<double>(c.dur_ns));
  out->callback = fit_affine(cb);

  // Fast: cycles that answered on the fast path only; without any (cache
  // off), cycles that used neither path (empty: the control allreduce alone).
  std::vector<double> fast, empty;
  std::vector<std::pair<double, double>> slow;
  for (const auto& n : s.negotiations) {
    if (n.slow)
      slow.emplace_back(n.responses, static_cast<double>(n.dur_ns));
    else
      (n.responses > 0 ? fast : empty).push_back(static_cast<double>(n.dur_ns));
  }
  out->negotiate_slow = fit_affine(slow);
  if (!fast.empty()) {
    out->negotiate_fast_ns = median(fast);
  } else if (!empty.empty()) {
    out->negotiate_fast_ns = median(empty);
    out->notes.push_back(
        "no fast-path cycle recorded (cache off?): the fast path is the median "
        "of " +
        std::to_string(empty.size()) + " empty cycle(s)");
  } else if (!slow.empty()) {
    out->negotiate_fast_ns = out->negotiate_slow.alpha_ns / 2;
    out->notes.push_back(
        "no fast-path or empty cycle recorded (cache off?): the fast path is assumed half the "
        "slow path's fixed cost");
  }
  if (slow.empty()) {
    out->negotiate_slow.alpha_ns = 2 * out->negotiate_fast_ns;
    out->notes.push_back("no slow-path cycle recorded: the slow path is assumed twice the fast");
  }
  return Status::OK();
}

}  // namespace ringscope::autotune
