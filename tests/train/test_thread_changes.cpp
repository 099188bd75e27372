// The thread governor (core/thread_governor.hpp) changes the running thread count in the middle of
// a run, never the parts work is divided into (threading.hpp): a Transformer trained while 1 and 2
// threads alternate at every step ends on the bits of the same run with 2 threads throughout.
#include <cstring>

#include "attn/core/threading.hpp"
#include "attn/families/transformer/run.hpp"
#include "attn/optim/config.hpp"
#include "reversal_fixture.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

constexpr int32_t kVocab = 40;

// Big enough that the seam splits its products over two threads (2^19 multiply-adds and up).
std::vector<Tensor> train_params(const train::TrainCallbacks& callbacks) {
  transformer::TransformerConfig c;
  c.src_vocab = c.tgt_vocab = kVocab;
  c.d_model = 64;
  c.heads = 4;
  c.d_ff = 256;
  c.enc_layers = c.dec_layers = 1;
  c.dropout = 0.1f;
  Rng init(3);
  transformer::Transformer model(c, init);
  const data::TokenSplit split = test::reversal_split(192, kVocab, 6, 16);
  const data::Vocab vocab = test::word_vocab(kVocab);
  train::TrainConfig tc;
  tc.epochs = 1;
  tc.max_tokens = 512;
  tc.seed = 4;
  tc.optimizer.kind = optim::OptimizerKind::adam;
  tc.optimizer.schedule = optim::ConstantLr(1e-3f);
  train::fit(transformer::transformer_task(model, split, nullptr, vocab, vocab), tc, callbacks);
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
