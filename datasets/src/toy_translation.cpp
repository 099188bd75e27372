// Toy translation: random token sequences and their reversed or sorted translations.
#include "attn/datasets/toy_translation.hpp"

#include <algorithm>

#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {

const char* toy_task_name(ToyTask task) { return task == ToyTask::reverse ? "reverse" : "sort"; }

std::vector<std::string> toy_vocabulary(int64_t vocab) {
  std::vector<std::string> words = {"<pad>", "<s>", "</s>", "<unk>"};
  for (int64_t id = kFirstToken; id < vocab; ++id) {
    std::string word = "t";   // appended, not "t" + ...: GCC 12 warns falsely (-Wrestrict) on that
    word += std::to_string(id);
    words.push_back(std::move(word));
  }
  return words;
}

Splits<TokenSplit> make_toy_translation(const ToyConfig& cfg, const SplitSizes& sizes, uint64_t seed) {
  const std::string task = toy_task_name(cfg.task);
  check_sizes(task, sizes);
  if (cfg.vocab <= kFirstToken)
    throw ConfigError(task + ": vocab must be > " + std::to_string(kFirstToken) +
                      " (ids 0-3 are reserved), got " + std::to_string(cfg.vocab));
  if (cfg.vocab > (int64_t{1} << 31) - 1)
    throw ConfigError(task + ": vocab must fit int32, got " + std::to_string(cfg.vocab));
  if (cfg.min_len < 1) throw ConfigError(task + ": min_len must be >= 1, got " + std::to_string(cfg.min_len));
  if (cfg.max_len < cfg.min_len)
    throw ConfigError(task + ": max_len (" + std::to_string(cfg.max_len) + ") must be >= min_len (" +
                      std::to_string(cfg.min_len) + ")");

  const int64_t S = cfg.max_len, T = cfg.max_len + 1, tokens = cfg.vocab - kFirstToken;
  return draw_splits<TokenSplit>(sizes, seed, [&](int64_t n, Rng& rng, const KeySet& earlier, KeySet& drawn,
                                                  const char* split) {
    TokenSplit s;
    s.name = split;
    Tensor src_rows({n, S}, DType::i32), tgt_rows({n, T}, DType::i32);
    s.src_len = Tensor({n}, DType::i32);
    s.tgt_len = Tensor({n}, DType::i32);
    draw_disjoint(task, split, n, rng, earlier, drawn, [&](Rng& r, int64_t i) {
      int32_t* src = src_rows.idata() + i * S;
      int32_t* tgt = tgt_rows.idata() + i * T;
      std::fill(src, src + S, kPad);
      std::fill(tgt, tgt + T, kPad);
      const int64_t L = cfg.min_len + r.uniform_int(cfg.max_len - cfg.min_len + 1);
      for (int64_t t = 0; t < L; ++t) src[t] = static_cast<int32_t>(kFirstToken + r.uniform_int(tokens));
      if (cfg.task == ToyTask::reverse) {
        std::reverse_copy(src, src + L, tgt);
      } else {
        std::copy(src, src + L, tgt);
        std::sort(tgt, tgt + L);
      }
      tgt[L] = kEos;
      s.src_len.idata()[i] = static_cast<int32_t>(L);
      s.tgt_len.idata()[i] = static_cast<int32_t>(L + 1);
      return hash_bytes(src, static_cast<size_t>(L) * sizeof(int32_t), static_cast<uint64_t>(L));
    });
    s.src = src_rows;
    s.tgt = tgt_rows;
    return s;
  });
}

void write_splits(io::File& file, const Splits<TokenSplit>& splits) {
  for (int k = 0; k < 3; ++k) data::write_token_split(file, kSplitNames[k], splits[k]);
}

void write_vocabularies(io::File& file, const std::vector<std::string>& src,
                        const std::vector<std::string>& tgt) {
  file.write_strings("/vocab/src", src);
  file.write_strings("/vocab/tgt", tgt);
}

}  // namespace attn::datasets
