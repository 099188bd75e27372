// The thread governor (core/thread_governor.hpp) changes the running thread count in the middle of
// a run, never the parts work is divided into (threading.hpp): a Transformer trained while 1 and 2
// threads alternate at every step ends on the bits of the same run with 2 threads throughout.
#include <cstring>

#include "attn/core/threading.hpp"
#include "attn/data/batching.hpp"
#include "attn/optim/config.hpp"
#include "attn/train/transformer_run.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

constexpr int32_t kVocab = 40;

data::Vocab numbers_vocab() {
  std::vector<std::string> tokens(data::kReservedTokens, data::kReservedTokens + data::kNumReserved);
  for (int32_t id = data::kNumReserved; id < kVocab; ++id) {
    std::string token(1, 'w');   // appended, not concatenated: GCC 12's -Wrestrict
    token += std::to_string(id);
    tokens.push_back(token);
  }
  return data::Vocab::from_tokens(tokens);
}

// Reversal of random sentences of 6 to 16 words.
data::TokenSplit reverse_split(int64_t n) {
  Rng rng(11);
  std::vector<std::vector<int32_t>> src, tgt;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> s;
    for (int64_t t = 0, len = 6 + rng.uniform_int(11); t < len; ++t)
      s.push_back(static_cast<int32_t>(data::kNumReserved + rng.uniform_int(kVocab - data::kNumReserved)));
    src.push_back(s);
    std::vector<int32_t> r(s.rbegin(), s.rend());
    r.push_back(data::kEos);
    tgt.push_back(std::move(r));
  }
  const data::PaddedBatch a = data::pad_sequences(src), b = data::pad_sequences(tgt);
  return {.name = "train", .src = a.tokens, .src_len = a.lengths, .tgt = b.tokens, .tgt_len = b.lengths, .segments = {}};
}

// Big enough that the seam splits its products over two threads (2^19 multiply-adds and up).
std::vector<Tensor> train_params(const train::TrainCallbacks& callbacks) {
  models::TransformerConfig c;
  c.src_vocab = c.tgt_vocab = kVocab;
  c.d_model = 64;
  c.heads = 4;
  c.d_ff = 256;
  c.enc_layers = c.dec_layers = 1;
  c.dropout = 0.1f;
  Rng init(3);
  models::Transformer model(c, init);
  const data::TokenSplit split = reverse_split(192);
  const data::Vocab vocab = numbers_vocab();
  train::TrainConfig tc;
  tc.epochs = 1;
  tc.max_tokens = 512;
  tc.seed = 4;
  tc.optimizer.kind = optim::OptimizerKind::adam;
  tc.optimizer.schedule = optim::ConstantLr(1e-3f);
  train::fit(train::transformer_task(model, split, nullptr, vocab, vocab), tc, callbacks);
  std::vector<Tensor> out;
  for (const Param* p : model.params()) out.push_back(p->value.clone());
  return out;
}

}  // namespace

TEST_CASE("training gives the same bits when the thread count changes between steps", "[integration][threads]") {
  const int before = num_parts();
  set_num_threads(2);
  const std::vector<Tensor> two = train_params({});
  int64_t steps = 0;
  train::TrainCallbacks alternate;
  alternate.on_step = [&](const train::StepReport& r) {
    set_running_threads(r.step % 2 == 0 ? 2 : 1);
    steps = r.step;
  };
  set_running_threads(1);
  const std::vector<Tensor> mixed = train_params(alternate);
  set_num_threads(before);
  CHECK(steps >= 4);   // 192 sentences in batches of 512 tokens: 5 steps
  REQUIRE(two.size() == mixed.size());
  for (size_t k = 0; k < two.size(); ++k) {
    INFO("parameter " << k);
    REQUIRE(two[k].numel() == mixed[k].numel());
    CHECK(std::memcmp(two[k].data(), mixed[k].data(), static_cast<size_t>(two[k].numel()) * sizeof(float)) == 0);
  }
}
