#include "track/kalman.h"

#include <algorithm>
#include <cmath>

namespace fovea::track {
namespace {

// DeepSORT's weights (see kalman.h): standard deviations per unit of box height.
constexpr double kPositionWeight = 1.0 / 20.0;
constexpr double kVelocityWeight = 1.0 / 160.0;
// The aspect ratio's standard deviations are absolute (DeepSORT: 1e-2 for the state, 1e-5 for its
// velocity, 1e-1 for the measurement): the aspect of a tracked object barely changes.
constexpr double kAspectStd = 1e-2;
constexpr double kAspectVelocityStd = 1e-5;
constexpr double kAspectMeasurementStd = 1e-1;

double square(double v) {
  return v * v;
}

std::array<double, 4> measurement(Box b) {
  const double w = double{b.x2} - b.x1, h = double{b.y2} - b.y1;
  return {b.x1 + w / 2.0, b.y1 + h / 2.0, w / h, h};
}

// Inverse of a symmetric positive definite 4x4 matrix by Gauss-Jordan elimination; the diagonal
// noise added to S keeps it well conditioned, so no pivoting is needed.
std::array<double, 16> inverse4(std::array<double, 16> m) {
  std::array<double, 16> inv{};
  for (int i = 0; i < 4; ++i) inv[i * 4 + i] = 1.0;
  for (int c = 0; c < 4; ++c) {
    const double pivot = 1.0 / m[c * 4 + c];
    for (int j = 0; j < 4; ++j) {
      m[c * 4 + j] *= pivot;
      inv[c * 4 + j] *= pivot;
    }
    for (int r = 0; r < 4; ++r) {
      if (r == c) continue;
      const double f = m[r * 4 + c];
      for (int j = 0; j < 4; ++j) {
        m[r * 4 + j] -= f * m[c * 4 + j];
        inv[r * 4 + j] -= f * inv[c * 4 + j];
      }
    }
  }
  return inv;
}

}  // namespace

BoxKalman::BoxKalman(Box box) {
  const std::array<double, 4> z = measurement(box);
  std::copy(z.begin(), z.end(), x_.begin());
  const double h = z[3];
  const std::array<double, 8> std_dev = {
      2 * kPositionWeight * h,  2 * kPositionWeight * h,  kAspectStd,         2 * kPositionWeight * h,
      10 * kVelocityWeight * h, 10 * kVelocityWeight * h, kAspectVelocityStd, 10 * kVelocityWeight * h};
  for (int i = 0; i < 8; ++i) p_[i * 8 + i] = square(std_dev[i]);
}

void BoxKalman::predict(bool hold_height) {
  if (hold_height) x_[7] = 0.0;
  for (int i = 0; i < 4; ++i) x_[i] += x_[i + 4];
  // P = F P F^T with F = [I I; 0 I]: add the velocity rows to the position rows, then the
  // velocity columns to the position columns.
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 8; ++c) p_[r * 8 + c] += p_[(r + 4) * 8 + c];
  }
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 4; ++c) p_[r * 8 + c] += p_[r * 8 + c + 4];
  }
  const double h = x_[3];
  const std::array<double, 8> q = {kPositionWeight * h, kPositionWeight * h, kAspectStd,
                                   kPositionWeight * h, kVelocityWeight * h, kVelocityWeight * h,
                                   kAspectVelocityStd,  kVelocityWeight * h};
  for (int i = 0; i < 8; ++i) p_[i * 8 + i] += square(q[i]);
}

void BoxKalman::update(Box box) {
  const std::array<double, 4> z = measurement(box);
  const double h = x_[3];
  const std::array<double, 4> r = {kPositionWeight * h, kPositionWeight * h, kAspectMeasurementStd,
                                   kPositionWeight * h};
  // S = H P H^T + R is P's top-left block plus R; K = P H^T S^-1 uses P's first four columns.
  std::array<double, 16> s{};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) s[i * 4 + j] = p_[i * 8 + j];
    s[i * 4 + i] += square(r[i]);
  }
  const std::array<double, 16> s_inv = inverse4(s);
  std::array<double, 32> k{};  // 8x4
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) {
      double sum = 0.0;
      for (int t = 0; t < 4; ++t) sum += p_[i * 8 + t] * s_inv[t * 4 + j];
      k[i * 4 + j] = sum;
    }
  }
  std::array<double, 4> innovation{};
  for (int i = 0; i < 4; ++i) innovation[i] = z[i] - x_[i];
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) x_[i] += k[i * 4 + j] * innovation[j];
  }
  // P -= K H P, where H P is P's first four rows (equal to K S K^T, one product cheaper).
  std::array<double, 32> hp{};
  std::copy(p_.begin(), p_.begin() + 32, hp.begin());
  for (int i = 0; i < 8; ++i) {
    for (int c = 0; c < 8; ++c) {
      double sum = 0.0;
      for (int t = 0; t < 4; ++t) sum += k[i * 4 + t] * hp[t * 8 + c];
      p_[i * 8 + c] -= sum;
    }
  }
}

Box BoxKalman::box() const {
  const double h = std::max(0.0, x_[3]);
  const double w = std::max(0.0, x_[2] * h);
  return Box{static_cast<float>(x_[0] - w / 2), static_cast<float>(x_[1] - h / 2),
             static_cast<float>(x_[0] + w / 2), static_cast<float>(x_[1] + h / 2)};
}

}  // namespace fovea::track
