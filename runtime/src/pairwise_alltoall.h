// Pairwise-exchange alltoall over Transport: every rank sends one block to
// every other rank and receives one from each, in n-1 steps.
#pragma once

#include <cstdint>
#include <vector>

#include "collective_context.h"

namespace ringscope {

// Where each rank's block lies in this rank's input and output, in bytes,
// from the agreed split matrix (entry s * n + d: rows rank s sends to rank
// d) and the bytes of one row.
struct AlltoallLayout {
  std::vector<size_t> send_bytes, send_offsets;  // by destination rank
  std::vector<size_t> recv_bytes, recv_offsets;  // by source rank
  std::vector<int64_t> recv_rows;                // by source rank
  size_t total_send = 0, total_recv = 0;
  static AlltoallLayout of(const std::vector<int64_t>& split_matrix, int ranks, int rank,
                           size_t row_bytes);
};

// Step k (1..n-1) sends this rank's block for rank r+k and receives rank
// r-k's block, straight into place. Every receive and then every send is
// posted up front, so the exchanges overlap and a late peer delays only
// its own block; the steps wait for the receives in order. A block of zero
// bytes is neither sent nor expected (both sides read the same matrix).
// This rank's own block is copied locally. Records one ALLTOALL_STEP per
// step, ending when that step's block has arrived (peers, bytes sent).
Status pairwise_alltoall(const CollectiveContext& ctx, const void* input, void* output,
                         const AlltoallLayout& layout);

}  // namespace ringscope
