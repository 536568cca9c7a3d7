// The ONNX backend conformance driver: runs the test cases that ship with ONNX (Debian's
// libonnx-testdata: <data>/<folder>/<case>/model.onnx with test_data_set_N/{input,output}_K.pb)
// through the loader, the planner and the CPU executor, and compares with the stored outputs.
//
// A case is skipped only for a reason outside the kernels' reach: an op fovea does not register,
// an IR version or opset outside the supported ranges, an element type or a non-tensor type
// (sequence, map, optional) fovea does not have, or training. Everything else must pass; a
// failure carries its reason (the first error, or the worst mismatching element).
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fovea::runtime::conformance {

// The folders the driver runs, in report order ("real" needs downloaded models).
inline constexpr std::array<std::string_view, 4> kFolders = {"node", "pytorch-converted", "pytorch-operator",
                                                             "simple"};
inline constexpr double kDefaultRtol = 1e-3;
inline constexpr double kDefaultAtol = 1e-5;

enum class Outcome { kPass, kFail, kSkip };
std::string_view outcome_name(Outcome outcome);

// Why a case is skipped; kNone for cases that run. Only kVersion cases are re-run informationally
// with the version check off.
enum class SkipKind { kNone, kVersion, kOp, kType, kTraining };

struct CaseResult {
  std::string folder;
  std::string name;  // "test_abs"
  Outcome outcome = Outcome::kPass;
  SkipKind skip = SkipKind::kNone;
  std::string reason;  // empty for passes

  std::string id() const { return folder + "/" + name; }  // as in the expectations file
};

// A case whose outputs legitimately differ from the stored ones by more than the defaults.
struct ToleranceException {
  std::string_view id;  // "<folder>/<case>"
  double rtol;
  double atol;
  std::string_view why;
};
const std::vector<ToleranceException>& tolerance_exceptions();

enum class Device { kCpu, kCuda };

struct RunOptions {
  // False: load models whose IR version or opset is out of range anyway (informational only).
  bool check_versions = true;
  // kCuda: the CUDA executor runs the plan (builds with CUDA only). Its plans are static, so
  // parameter inputs are bound as constants of the plan: integer graph inputs (shapes, axes,
  // indices) and the small float ones that no node reads as its data input (Clip's bounds,
  // Resize's roi and scales): constants in exported models, inputs only in these test files.
  // Ops without a CUDA kernel are skipped.
  Device device = Device::kCpu;
};

// Case folders of `folder` under `data_dir`, sorted by name; cases whose name contains `filter`.
std::vector<std::filesystem::path> list_cases(const std::filesystem::path& data_dir, std::string_view folder,
                                              std::string_view filter);

// Classifies and runs one case. The run happens in a child process, so that a crashing kernel is
// a failure of its case rather than of the whole driver.
CaseResult run_case(const std::filesystem::path& case_dir, std::string_view folder,
                    const RunOptions& options);

// The expected-failures file: one "<folder>/<case>: <reason>" per line; '#' starts a comment.
Result<std::map<std::string, std::string>> read_expectations(const std::filesystem::path& path);

// What makes the expectations check fail: failures not listed, and listed cases that were run and
// did not fail (or do not exist), so the list stays true.
struct ExpectationReport {
  std::vector<std::string> unexpected_failures;  // "<id>: <reason>"
  std::vector<std::string> stale;                // "<id>: <what happened instead>"
  bool ok() const { return unexpected_failures.empty() && stale.empty(); }
};
ExpectationReport check_expectations(const std::vector<CaseResult>& results,
                                     const std::map<std::string, std::string>& expectations);

// docs/conformance.md: counts per folder, the tolerance exceptions, every failure and skip with its
// reason, and (when `informational` holds results) how the out-of-range-version cases fare with
// the version check off. `cuda_section`, the report's "## On CUDA" section as written by hand from
// a GPU machine's run (cuda_section_of the file being replaced), follows the counts unchanged.
std::string markdown_report(const std::vector<CaseResult>& results,
                            const std::vector<CaseResult>& informational, std::string_view cuda_section = {});

// The "## On CUDA" section of a report, up to the next "## " heading; empty when it has none.
std::string cuda_section_of(std::string_view markdown);

}  // namespace fovea::runtime::conformance
