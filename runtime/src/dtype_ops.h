// Element-wise kernels the collectives need, for every DataType: combine a
// received segment into a local one (sum/min/max), scale a buffer, and copy
// with scaling. 16-bit floats are widened to float32 for the arithmetic.
#pragma once

#include <cstddef>

#include "ringscope/ringscope.h"

namespace ringscope {

// dst[i] = op(dst[i], src[i]) for count elements. Average combines as Sum;
// Product multiplies (integers wrap).
void reduce_into(DataType dtype, ReduceOp op, void* dst, const void* src, size_t count);

// dst[i] = op(a[i], b[i]) for count elements; dst may not overlap a or b.
void combine(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b, size_t count);

// dst[i] = out[i] = op(a[i], b[i]) * factor, in one pass: the last combine
// of a result that is needed in two places (a shared region its peers read,
// and the caller's output). a and b may each be dst or out (in place), but
// may not overlap them otherwise. Rounds as combine followed by
// scale_in_place would.
void combine_scaled_to_both(DataType dtype, ReduceOp op, void* dst, void* out, const void* a,
                            const void* b, size_t count, double factor);

// float16 / bfloat16: the sum of many inputs accumulated in float32 and
// rounded once (where one rank combines every rank's contribution, as in the
// shared-memory allreduce). acc[i] = float(src[i]) when `first`, else
// acc[i] += float(src[i]); then dst[i] = out[i] = round(acc[i] * factor).
bool is_16bit_float(DataType dtype);
void widen_add(DataType dtype, float* acc, const void* src, size_t count, bool first);
void narrow_scaled_to_both(DataType dtype, void* dst, void* out, const float* acc, size_t count,
                           double factor);

// buf[i] = the value that leaves op's result unchanged: 0 for Sum and
// Average, the largest value (+inf for floats) for Min, the lowest (-inf)
// for Max, 1 for Product. What a joined rank contributes (join_stand_ins.h).
void fill_identity(DataType dtype, ReduceOp op, void* buf, size_t count);

// buf[i] *= factor (integers are scaled in double and truncated).
void scale_in_place(DataType dtype, void* buf, size_t count, double factor);

// dst[i] = src[i] * factor; a plain memcpy when factor == 1.
void copy_scaled(DataType dtype, void* dst, const void* src, size_t count, double factor);

}  // namespace ringscope
