// Cast's kernel, shared with CastLike (cast_like.cpp): it converts input 0 to whatever dtype the
// output has, so the two ops differ only in where infer() takes that dtype from.
#pragma once

#include "runtime/op.h"

namespace fovea::runtime::ops {

// Output 0 = input 0 converted to output 0's dtype, element by element (convert_value's rules).
Status run_cast(KernelContext& ctx);

}  // namespace fovea::runtime::ops
