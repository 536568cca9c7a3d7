#include "runtime/ops/einsum_util.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

namespace fovea::runtime::ops {
namespace {

// Labels are ids: letters 0-51 (a-z, then A-Z), then one id per ellipsis dim counted from the
// right, so that ellipses of different ranks broadcast like numpy's.
constexpr int kLetters = 52;
constexpr int kLabelIds = kLetters + kMaxTensorRank;

int letter_id(char c) {
  return std::islower(static_cast<unsigned char>(c)) ? c - 'a' : c - 'A' + 26;
}

// One term of the equation ("b...ij"): its letters around the ellipsis, if it has one.
struct Term {
  std::string letters_before;  // the letters before the ellipsis, or all of them
  std::string letters_after;
  bool has_ellipsis = false;
};

Result<Term> parse_term(const InferContext& ctx, const std::string& text) {
  Term term;
  const std::size_t dots = text.find("...");
  term.has_ellipsis = dots != std::string::npos;
  term.letters_before = term.has_ellipsis ? text.substr(0, dots) : text;
  if (term.has_ellipsis) term.letters_after = text.substr(dots + 3);
  for (const std::string* part : {&term.letters_before, &term.letters_after}) {
    for (char c : *part) {
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        return ctx.error(StatusCode::kInvalidArgument, "equation term '", text, "' holds '",
                         std::string(1, c), "', expected letters and at most one '...'");
      }
    }
  }
  return term;
}

// The term's label ids, its ellipsis standing for `ellipsis_rank` dims: ellipsis dim e of E is
// id kLetters + E - 1 - e, so ids count from the right.
std::vector<int> term_labels(const Term& term, int ellipsis_rank) {
  std::vector<int> labels;
  for (char c : term.letters_before) labels.push_back(letter_id(c));
  for (int e = 0; e < ellipsis_rank; ++e) labels.push_back(kLetters + ellipsis_rank - 1 - e);
  for (char c : term.letters_after) labels.push_back(letter_id(c));
  return labels;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == separator) {
      parts.emplace_back();
    } else {
      parts.back().push_back(c);
    }
  }
  return parts;
}

}  // namespace

Result<EinsumPlan> einsum_plan(const InferContext& ctx, const std::vector<Shape>& inputs) {
  FOVEA_ASSIGN_OR_RETURN(std::string equation, ctx.node().attr_string("equation"));
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const std::size_t arrow = equation.find("->");
  const std::vector<std::string> input_terms = split(equation.substr(0, arrow), ',');
  if (input_terms.size() != inputs.size() || inputs.size() > kMaxEinsumOperands) {
    return ctx.error(StatusCode::kInvalidArgument,
                     fmt::format("equation '{}' has {} input terms for {} inputs (at most {})", equation,
                                 input_terms.size(), inputs.size(), kMaxEinsumOperands));
  }
  EinsumPlan plan;
  plan.operands = static_cast<int>(inputs.size());
  std::array<std::int64_t, kLabelIds> sizes;
  sizes.fill(-1);
  std::array<int, kLabelIds> uses{};
  std::vector<std::vector<int>> labels;
  int ellipsis_rank = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    FOVEA_ASSIGN_OR_RETURN(const Term term, parse_term(ctx, input_terms[k]));
    const auto rank = static_cast<int>(inputs[k].size());
    const auto letters = static_cast<int>(term.letters_before.size() + term.letters_after.size());
    const int own_ellipsis = rank - letters;
    if (own_ellipsis < 0 || (own_ellipsis > 0 && !term.has_ellipsis)) {
      return ctx.error(StatusCode::kInvalidArgument, "term '", input_terms[k], "' does not fit input ",
                       std::to_string(k), " of shape ", shape_string(inputs[k]));
    }
    ellipsis_rank = std::max(ellipsis_rank, own_ellipsis);
    labels.push_back(term_labels(term, own_ellipsis));
    for (std::size_t d = 0; d < labels.back().size(); ++d) {
      const int label = labels.back()[d];
      const std::int64_t size = inputs[k][d];
      ++uses[static_cast<std::size_t>(label)];
      std::int64_t& known = sizes[static_cast<std::size_t>(label)];
      const bool broadcasts = label >= kLetters && (size == 1 || known == 1);
      if (known >= 0 && known != size && !broadcasts) {
        return ctx.error(StatusCode::kInvalidArgument,
                         fmt::format("a label of equation '{}' has sizes {} and {}", equation, known, size));
      }
      if (known < 0 || known == 1) known = size;
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    FOVEA_ASSIGN_OR_RETURN(const Term term, parse_term(ctx, equation.substr(arrow + 2)));
    out_labels = term_labels(term, term.has_ellipsis ? ellipsis_rank : 0);
  } else {  // implicit: the ellipsis, then the letters used once in alphabetical (ASCII) order
    out_labels = term_labels(Term{.has_ellipsis = true}, ellipsis_rank);
    for (char c = 'A'; c <= 'z'; ++c) {
      if (std::isalpha(static_cast<unsigned char>(c)) && uses[static_cast<std::size_t>(letter_id(c))] == 1) {
        out_labels.push_back(letter_id(c));
      }
    }
  }
  std::array<bool, kLabelIds> in_output{};
  for (int label : out_labels) {
    if (sizes[static_cast<std::size_t>(label)] < 0 || in_output[static_cast<std::size_t>(label)]) {
      return ctx.error(StatusCode::kInvalidArgument, "equation '", equation,
                       "' has an output label that no input has, or repeats one");
    }
    in_output[static_cast<std::size_t>(label)] = true;
  }
  std::vector<int> sum_labels;
  for (int label = 0; label < kLabelIds; ++label) {
    if (sizes[static_cast<std::size_t>(label)] >= 0 && !in_output[static_cast<std::size_t>(label)]) {
      sum_labels.push_back(label);
    }
  }
  if (out_labels.size() > kMaxEinsumLabels || sum_labels.size() > kMaxEinsumLabels) {
    return ctx.error(StatusCode::kUnsupported, "equation '", equation, "' has more than ",
                     std::to_string(kMaxEinsumLabels), " output or summed labels");
  }
  // Each operand's stride per label: repeated labels add up (a diagonal), broadcast dims are 0.
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    std::array<std::int64_t, kLabelIds> stride{};
    const Shape strides = contiguous_strides(inputs[k]);
    for (std::size_t d = 0; d < labels[k].size(); ++d) {
      const auto label = static_cast<std::size_t>(labels[k][d]);
      if (inputs[k][d] == sizes[label]) stride[label] += strides[d];
    }
    for (std::size_t j = 0; j < out_labels.size(); ++j) {
      plan.out_strides[k][j] = stride[static_cast<std::size_t>(out_labels[j])];
    }
    for (std::size_t j = 0; j < sum_labels.size(); ++j) {
      plan.sum_strides[k][j] = stride[static_cast<std::size_t>(sum_labels[j])];
    }
  }
  plan.out_rank = static_cast<int>(out_labels.size());
  plan.sum_rank = static_cast<int>(sum_labels.size());
  for (std::size_t j = 0; j < out_labels.size(); ++j)
    plan.out_dims[j] = sizes[static_cast<std::size_t>(out_labels[j])];
  for (std::size_t j = 0; j < sum_labels.size(); ++j) {
    plan.sum_dims[j] = sizes[static_cast<std::size_t>(sum_labels[j])];
    plan.sum_count *= plan.sum_dims[j];
  }
  return plan;
}

Shape einsum_output_shape(const EinsumPlan& plan) {
  return Shape(plan.out_dims, plan.out_dims + plan.out_rank);
}

}  // namespace fovea::runtime::ops
