// Test helper: a small attnlab output file with everything attn-plot draws, values chosen so
// the right answer is obvious (each slice's maximum sits at a known cell).
#pragma once
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn::test {

// /attention/cross [2, 2, 3, 4]  (N, NH, T, S): example n, head h has its maximum 1 at
//                                (T, S) = (h + n, 3 - h - n); every other value is 0.1 * (n + h).
// /attention/layers/layer1 [2, 2, 3, 4]  the same plus 1 (a group of per-layer datasets)
// /attention/stack [2, 2, 2, 3, 4]  (N, layers, NH, T, S): /attention/cross + 10 * layer
// /test/src [2, 5] int32: row 0 "ein Mann </s>" (then padding), row 1 "ein Mann schläft </s>"
// /predictions [2, 4] int32: row 0 "a man </s>", row 1 "a man sleeps" (then padding)
// /vocab/src, /vocab/tgt: <pad> <s> </s> <unk> then the words; /vocab/short: too short for them
// /iterations/tokens, /iterations/masked [2, 3, 4] int32: a mask-predict refinement of its own
//   (not of /predictions), 3 iterations; the bracketed tokens were re-masked and predicted:
//   sentence 0: [a] [a] [sleeps] / a [man] sleeps / [the] man sleeps, then padding
//   sentence 1: [the] [dog] [dog] [café] / the dog [runs] [café] / the [dog] runs café
// /ntm/inputs [1, 6, 4], /ntm/write [1, 6, 10], /ntm/read [1, 6, 2, 10] (two read heads)
// /images [1, 3, 8, 8] (grey 0.5), /visual [1, 3, 4] (3 steps over a 2 x 2 grid), /captions [1, 3]
//   "a man </s>"... with the third step padding: [8, 9, 0]
// /metrics/train_loss [20] float, /metrics/valid_step [4] int32, /metrics/valid_loss [4] float
// /memnet/hops [1, 3, 5] (hops, sentences), /test/story [1, 5, 4] int32: 4 sentences and a
//   padding one; /vocab/words
void write_plot_fixture(const std::string& path);

// The slice /attention/cross[n, h] as written.
Tensor fixture_cross(int64_t n, int64_t h);

}  // namespace attn::test
