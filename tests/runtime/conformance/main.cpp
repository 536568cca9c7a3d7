// fovea_conformance: runs ONNX's backend test cases on the CPU executor.
//
//   fovea_conformance [--data DIR] [--filter SUBSTR] [--expectations FILE] [--markdown FILE]
//                     [--ignore-versions] [-v]
//
// Exit status 0 when every case passes or is skipped, or (with --expectations) when the failures
// are exactly the listed ones. Without the data folder it prints SKIPPED and exits 0, which CTest
// reports as a skipped test.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "conformance/conformance.h"

namespace {

namespace conf = fovea::runtime::conformance;

struct Options {
  std::string data = "/usr/include/onnx/backend/test/data";
  std::string filter;
  std::string markdown;
  std::string expectations;
  bool ignore_versions = false;
  bool verbose = false;
  std::string device = "cpu";
};

void print_summary(const std::vector<conf::CaseResult>& results) {
  for (std::string_view folder : conf::kFolders) {
    int counts[3] = {};
    for (const auto& r : results) {
      if (r.folder == folder) ++counts[static_cast<int>(r.outcome)];
    }
    fmt::print("{:<18} {:4} passed {:4} failed {:4} skipped\n", folder, counts[0], counts[1], counts[2]);
  }
}

int run(const Options& options) {
  if (!std::filesystem::is_directory(options.data)) {
    // The word CTest's SKIP_REGULAR_EXPRESSION looks for.
    fmt::print("SKIPPED: no ONNX backend test data at {} (install libonnx-testdata)\n", options.data);
    return 0;
  }
  std::map<std::string, std::string> expectations;
  if (!options.expectations.empty()) {
    auto read = conf::read_expectations(options.expectations);
    if (!read.is_ok()) {
      fmt::print(stderr, "{}\n", read.status().message());
      return 2;
    }
    expectations = std::move(*read);
  }
  const conf::Device device = options.device == "cuda" ? conf::Device::kCuda : conf::Device::kCpu;
  const auto start = std::chrono::steady_clock::now();
  std::vector<conf::CaseResult> results;
  std::vector<conf::CaseResult> informational;
  for (std::string_view folder : conf::kFolders) {
    for (const auto& case_dir : conf::list_cases(options.data, folder, options.filter)) {
      std::fflush(stdout);  // the case runs in a forked child
      results.push_back(conf::run_case(case_dir, folder, {.device = device}));
      const conf::CaseResult& r = results.back();
      if (options.verbose) {
        fmt::print("{:<4} {}{}{}\n", conf::outcome_name(r.outcome), r.id(), r.reason.empty() ? "" : ": ",
                   r.reason);
      }
      if (options.ignore_versions && r.skip == conf::SkipKind::kVersion) {
        std::fflush(stdout);
        informational.push_back(
            conf::run_case(case_dir, folder, {.check_versions = false, .device = device}));
        const conf::CaseResult& info = informational.back();
        if (options.verbose) {
          fmt::print("     (versions unchecked: {}{}{})\n", conf::outcome_name(info.outcome),
                     info.reason.empty() ? "" : ": ", info.reason);
        }
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_summary(results);
  fmt::print("{} cases in {:.1f} s\n", results.size(), seconds);
  if (!options.markdown.empty()) {
    // The GPU machine's section is kept: this machine's run cannot write it.
    std::string cuda_section;
    if (std::ifstream old(options.markdown); old) {
      cuda_section = conf::cuda_section_of(std::string(std::istreambuf_iterator<char>(old), {}));
    }
    std::ofstream(options.markdown) << conf::markdown_report(results, informational, cuda_section);
  }
  if (options.expectations.empty()) {
    int failed = 0;
    for (const auto& r : results) {
      if (r.outcome != conf::Outcome::kFail) continue;
      if (!options.verbose) fmt::print("FAIL {}: {}\n", r.id(), r.reason);
      ++failed;
    }
    return failed == 0 ? 0 : 1;
  }
  const conf::ExpectationReport report = conf::check_expectations(results, expectations);
  for (const auto& line : report.unexpected_failures) fmt::print("unexpected failure: {}\n", line);
  for (const auto& line : report.stale) fmt::print("stale expectation: {}\n", line);
  if (!report.ok()) {
    fmt::print("{} unexpected failures, {} stale expectations in {}\n", report.unexpected_failures.size(),
               report.stale.size(), options.expectations);
  }
  return report.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app("Runs ONNX's backend test cases (libonnx-testdata) on fovea's CPU or CUDA executor");
  app.add_option("--data", options.data, "folder holding node/, pytorch-converted/, ... ")
      ->capture_default_str();
  app.add_option("--filter", options.filter, "run only cases whose <folder>/<case> contains this");
  app.add_option("--markdown", options.markdown, "write the report (docs/conformance.md) here");
  app.add_option("--expectations", options.expectations,
                 "expected failures, '<folder>/<case>: <reason>' per line; fail on any difference");
  app.add_flag("--ignore-versions", options.ignore_versions,
               "also run the out-of-range-version cases with the version check off (informational)");
  app.add_flag("-v,--verbose", options.verbose, "print every case");
  app.add_option("--device", options.device, "cpu, or cuda (the CUDA executor, on the GPU machine)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return run(options);
}
