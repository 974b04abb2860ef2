// Who talks to whom in recursive doubling over any number of ranks, shared
// by the data allreduce (recursive_doubling_allreduce.cc) and the control
// plane's AND (Transport::allreduce_and). With p the largest power of two
// <= n and rem = n - p: ranks 0 .. 2*rem-1 pair up, each even one handing
// its buffer to the odd one above it (the fold) and getting the result back
// at the end; the p remaining ranks take virtual ranks 0 .. p-1 and, at each
// mask 1, 2, .. p/2, exchange with virtual rank (v XOR mask).
#pragma once

namespace ringscope {

struct DoublingPeers {
  DoublingPeers(int n, int rank) : rank(rank) {
    while (p * 2 <= n) p *= 2;
    rem = n - p;
    vrank = rank < 2 * rem ? (rank % 2 == 0 ? -1 : rank / 2) : rank - rem;
  }
  // An even rank of the fold: sends to rank + 1, receives the result from it.
  bool folded_out() const { return vrank < 0; }
  // An odd rank of the fold: receives from rank - 1 first, answers it last.
  bool takes_fold() const { return rank < 2 * rem && rank % 2 == 1; }
  // The real rank of virtual rank v.
  int rank_of(int v) const { return v < rem ? v * 2 + 1 : v + rem; }
  // This rank's partner at `mask` (a power of two below p).
  int partner(int mask) const { return rank_of(vrank ^ mask); }

  int rank;
  int p = 1;
  int rem = 0;
  int vrank = 0;  // -1 when folded out
};

}  // namespace ringscope
