// The report's tables as text: aligned for the terminal, CSV for spreadsheets. Column names are
// Nsight Systems' (times in ns), so the two tools' tables can be put side by side.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "trace/analysis.h"

namespace fovea::trace {

struct TextTable {
  std::string name;  // nvtx_gpu_proj_sum, nvtx_sum, ... (also the CSV file's stem)
  std::vector<std::string> columns;
  std::vector<bool> numeric;  // per column: right-aligned in text
  std::vector<std::vector<std::string>> rows;
};

// nvtx_gpu_proj_sum, nvtx_sum, cuda_gpu_kern_sum and gpu_gaps; `top` keeps the first N rows.
std::vector<TextTable> run_tables(const Tables& tables, std::optional<std::size_t> top);

// nvtx_gpu_proj_sum on its own; the cells of one row are shared with the multi-run table.
std::vector<std::string> gpu_proj_cells(const GpuProjRow& row);
TextTable gpu_proj_table(const std::vector<GpuProjRow>& rows, std::optional<std::size_t> top);

std::string format_aligned(const TextTable& table);
std::string format_csv(const TextTable& table);

}  // namespace fovea::trace
